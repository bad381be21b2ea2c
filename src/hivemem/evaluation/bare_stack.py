"""The bare stack of ``hivemem bench --load --bare``: FastAPI + uvicorn answering the
load's routes over ``hivemem.store.baseline.BareStore`` (one plain FTS5 ``MATCH`` per
search, one ``INSERT`` per write; no ranking, vectors, entities, auth or versions).

Run as ``python -m hivemem.evaluation.bare_stack DB PORT WORKERS``: uvicorn's own
worker processes when WORKERS > 1 (the same cores HiveMem's ``--workers`` gets). The
routes and answers have the shapes the load clients read from HiveMem's API.
"""

# No ``from __future__ import annotations`` here: FastAPI reads the route functions'
# annotations at definition time, and the body models are local to ``create_app``.
import os
import sys
from typing import Any

from ..store.baseline import BareStore

DB_ENV = "HIVEMEM_BARE_DB"


def create_app(path: str) -> Any:
    from fastapi import FastAPI, HTTPException
    from pydantic import BaseModel

    class Write(BaseModel):
        content: str

    class Search(BaseModel):
        query: str
        limit: int = 10

    store = BareStore(path)
    app = FastAPI()

    @app.get("/v1/health")
    def health() -> dict[str, str]:
        return {"status": "ok"}

    @app.post("/v1/scopes/{scope}/memories")
    def add(scope: str, body: Write) -> dict[str, Any]:
        return {"memory": {"id": store.add(scope, body.content), "content": body.content}}

    @app.post("/v1/scopes/{scope}/search")
    def search(scope: str, body: Search) -> dict[str, Any]:
        return {"results": store.search(scope, body.query, body.limit)}

    @app.get("/v1/scopes/{scope}/memories/{memory_id}")
    def get(scope: str, memory_id: str) -> dict[str, Any]:
        found = store.get(scope, memory_id)
        if found is None:
            raise HTTPException(404, "no such memory")
        return {"memory": found}

    return app


def app_from_env() -> Any:
    """The app of a uvicorn worker process (the database from ``HIVEMEM_BARE_DB``)."""
    return create_app(os.environ[DB_ENV])


def main(argv: list[str]) -> None:
    import uvicorn

    db, port, workers = argv[0], int(argv[1]), int(argv[2])
    BareStore(db)  # the schema, once, before any worker
    os.environ[DB_ENV] = db
    uvicorn.run(
        "hivemem.evaluation.bare_stack:app_from_env",
        factory=True,
        host="127.0.0.1",
        port=port,
        workers=workers,
        log_level="warning",
    )


if __name__ == "__main__":
    main(sys.argv[1:])

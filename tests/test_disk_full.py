"""A full disk (issue 11): a real, small tmpfs is filled until a write fails. The failure
is one ``StoreFull`` (a ``StoreError``) that says the disk is full, with the driver's
error chained; the CLI exits with the store error code (6); the HTTP API answers 507 in
the one error shape; and once space is freed every acknowledged write is there and found
by its unique token. Skipped, with the reason, where a tmpfs cannot be mounted (not
root, no ``mount``, a container without the capability).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

import hivemem
from hivemem import StoreError, StoreFull
from hivemem.frontends.cli import main as cli_main
from hivemem.frontends.http import create_app

FILLER = " ".join(f"word{i}" for i in range(120))


def mount_tmpfs(where: Path, size: str) -> None:
    """Mount a tmpfs of ``size`` at ``where``, or skip the test saying why not."""
    if shutil.which("mount") is None:
        pytest.skip("no `mount` command: cannot make a small disk to fill")
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root: the full-disk test is skipped")
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})")


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs, with a ballast file that takes most of it (deleted to free space)."""
    where = tmp_path / "disk"
    mount_tmpfs(where, "4m")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def ballast(where: Path, free_left: int) -> Path:
    """Fill the disk but ``free_left`` bytes with one file; returns its path."""
    stat = os.statvfs(where)
    size = max(stat.f_bavail * stat.f_frsize - free_left, 0)
    path = where / "ballast"
    with open(path, "wb") as fp:
        fp.write(b"\0" * size)
    return path


def token(i: int, run: str = "r") -> str:
    return f"uniq{run}{i:05d}zz"


def fill(mem, run: str = "r", limit: int = 5000) -> tuple[list[str], StoreFull]:
    """Save memories until the disk is full; the ids acknowledged, and the error."""
    acked: list[str] = []
    for i in range(limit):
        try:
            acked.append(mem.save(f"{token(i, run)} {FILLER}").id)
        except StoreFull as exc:
            return acked, exc
    raise AssertionError(f"the disk never filled up after {limit} writes")


def assert_disk_full_error(exc: BaseException) -> None:
    assert isinstance(exc, StoreFull) and isinstance(exc, StoreError)
    assert "full" in str(exc) and "rolled back" in str(exc)
    assert "cannot rollback" not in str(exc)
    cause = exc.__cause__
    assert cause is not None and "full" in str(cause).lower(), repr(cause)
    assert exc.exit_code == 6


def test_a_write_on_a_full_disk_is_one_clear_error_and_loses_nothing(small_disk):
    path = small_disk / "memory.db"
    store = hivemem.open(path, embedder="hash")
    mem = store.scope("team-a")
    mem.save("written before the disk filled", key="before")
    weight = ballast(small_disk, 1_500_000)
    acked, error = fill(mem)
    assert_disk_full_error(error)
    assert acked, "some writes fit before the disk filled"
    for attempt in range(3):  # every later write: the same clear error, never another
        with pytest.raises(StoreFull):
            mem.add_episodes(
                [{"content": f"turn {attempt} {FILLER}", "session_id": "s", "role": "user"}]
            )
    assert mem.get("before").content == "written before the disk filled"  # reads still work
    weight.unlink()  # free the space
    more = mem.save(f"{token(0, 'after')} written once space was freed")
    store.flush()
    store.close()

    with hivemem.open(path, embedder="hash") as again:
        mem = again.scope("team-a")
        for i, memory_id in enumerate(acked):
            assert mem.get(memory_id).content.startswith(token(i))
            hits = mem.search(token(i), limit=5)
            assert hits and hits[0].memory.id == memory_id, token(i)
        assert mem.get(more.id).content.startswith(token(0, "after"))
        assert not mem.search(f"turn {FILLER[:20]}", kind="episode")  # nothing half-written
        assert again.stats()["total"] == len(acked) + 2


def test_the_cli_exits_with_the_store_error_code_on_a_full_disk(small_disk):
    path = small_disk / "memory.db"
    with hivemem.open(path, embedder="none") as store:
        store.scope("default").save("first memory", key="first")
    weight = ballast(small_disk, 350_000)
    runner = CliRunner()
    results = []
    for i in range(400):
        result = runner.invoke(cli_main, ["--db", str(path), "add", f"{token(i)} {FILLER}"])
        results.append(result)
        if result.exit_code != 0:
            break
    failed = results[-1]
    assert failed.exit_code == 6, failed.output
    assert "full" in failed.output and "Traceback" not in failed.output
    assert failed.exception is None or isinstance(failed.exception, SystemExit)
    weight.unlink()
    listed = runner.invoke(cli_main, ["--db", str(path), "list", "--limit", "1000"])
    assert listed.exit_code == 0
    acked = sum(1 for r in results if r.exit_code == 0)
    assert acked > 0, "some writes fit before the disk filled"
    with hivemem.open(path, embedder="none") as store:
        assert store.stats()["total"] == acked + 1


def test_the_http_api_answers_507_on_a_full_disk(small_disk):
    path = small_disk / "memory.db"
    store = hivemem.open(path, embedder="none")
    secret = store.tokens.create("w", {"team-a": "write"}, store.clock())[1]
    app = create_app(store)
    weight = ballast(small_disk, 600_000)

    async def main():
        transport = httpx.ASGITransport(app=app)
        headers = {"Authorization": f"Bearer {secret}"}
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as client:
            answers = []
            for i in range(400):
                answer = await client.post(
                    "/v1/scopes/team-a/memories",
                    json={"content": f"{token(i)} {FILLER}"},
                    headers=headers,
                )
                answers.append(answer)
                if answer.status_code != 200:
                    break
            return answers

    try:
        answers = asyncio.run(main())
    finally:
        app.state.api.close()
    last = answers[-1]
    assert last.status_code == 507, last.text
    error = last.json()["error"]
    assert error["code"] == "insufficient_storage" and "full" in error["message"]
    weight.unlink()
    acked = [a.json()["memory"]["id"] for a in answers if a.status_code == 200]
    mem = store.scope("team-a")
    assert [mem.get(i).id for i in acked] == acked
    store.close()


@pytest.mark.long
@pytest.mark.parametrize("free_left", [50_000, 400_000, 900_000, 1_700_000, 2_500_000])
def test_full_disk_rounds_with_every_kind_of_write(small_disk, free_left):
    """The long form: the disk fills during saves, episode batches, corrections, vault
    writes and maintenance; every failure is ``StoreFull``, nothing acknowledged is lost."""
    path = small_disk / "memory.db"
    store = hivemem.open(path, embedder="hash")
    mem = store.scope("team-a")
    weight = ballast(small_disk, free_left)
    acked: dict[str, str] = {}
    failures: list[BaseException] = []
    for i in range(3000):
        try:
            step = i % 4
            if step == 0:
                m = mem.save(f"{token(i)} {FILLER}")
            elif step == 1:
                m = mem.add_episodes(
                    [{"content": f"{token(i)} {FILLER}", "session_id": "s", "role": "user"}]
                )[0]
            elif step == 2 and acked:
                first = next(iter(acked))
                m = mem.correct(first, f"{token(i)} corrected {FILLER}")
                acked.pop(first)
            else:
                store.vault("team-a").set(f"cursor-{i}", {"page": i})
                continue
            acked[m.id] = token(i)
        except StoreError as exc:
            failures.append(exc)
            if len(failures) >= 5:
                break
    assert failures, "the disk never filled"
    for exc in failures:
        assert_disk_full_error(exc)
    weight.unlink()
    store.close()
    with hivemem.open(path, embedder="hash") as again:
        mem = again.scope("team-a")
        for memory_id, word in acked.items():
            assert word in mem.get(memory_id).content
            assert memory_id in [h.memory.id for h in mem.search(word, limit=5)]
    print(f"\nRELIABILITY diskfull free={free_left} acked={len(acked)} StoreFull={len(failures)}")

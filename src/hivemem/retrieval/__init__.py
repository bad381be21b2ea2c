"""The read path: the keyword lane, the pipeline (lanes, fusion, ranking, re-rank), snippets."""

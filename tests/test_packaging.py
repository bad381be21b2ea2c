"""The package as a user installs it (issue 23, item 2): ``python -m build`` makes a wheel
and an sdist that pass ``twine check``; the wheel installs into a fresh virtual
environment with no network and runs the README's first Python block; it ships
``py.typed`` and every data file the code reads."""

from __future__ import annotations

import os
import re
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("build", reason="the packaging tools (requirements-dev.lock)")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The wheel and sdist, built offline from a copy of the tracked files (the build
    leaves build/ and *.egg-info behind: not in the checkout)."""
    tree = tmp_path_factory.mktemp("tree")
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in tracked)):
        if (ROOT / name).is_file():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, tree / name)
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_the_wheel_and_sdist_pass_twine_check(dist):
    files = sorted(p.name for p in dist.iterdir())
    assert len(files) == 2 and files[0].endswith(".whl") and files[1].endswith(".tar.gz")
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, dist.iterdir())],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.count("PASSED") == 2, done.stdout + done.stderr


def test_the_wheel_ships_every_data_file_the_code_reads(dist):
    wheel = next(dist.glob("*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    src = ROOT / "src"
    wanted = {
        str(p.relative_to(src))
        for p in (src / "hivemem").rglob("*")  # not src/*.egg-info: an install's own
        if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts
    }
    assert "hivemem/py.typed" in wanted
    assert wanted <= names, sorted(wanted - names)


def _readme_first_python_block() -> str:
    readme = (ROOT / "README.md").read_text()
    return re.search(r"```python\n(.*?)```", readme, re.S).group(1)


def test_the_wheel_installs_offline_and_runs_the_readme(dist, tmp_path):
    """A fresh venv; the wheel installed with no index (the dependencies come from this
    environment's site-packages through a .pth file: nothing is downloaded)."""
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Only the dependencies: this checkout's editable hivemem stays out (its .pth is
    # not read from a folder that is not a site dir).
    (Path(purelib) / "deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    wheel = next(dist.glob("*.whl"))
    offline = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", str(wheel)],
        check=True,
        env=offline,
        timeout=300,
    )
    work = tmp_path / "work"
    work.mkdir()
    clean = {k: v for k, v in offline.items() if not k.startswith(("HIVEMEM_", "PYTHONPATH"))}
    where = subprocess.run(
        [str(python), "-c", "import hivemem; print(hivemem.__file__)"],
        cwd=work,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert where.startswith(purelib), where  # the installed wheel, not the checkout
    done = subprocess.run(
        [str(python), "-c", _readme_first_python_block()],
        cwd=work,
        env={**clean, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Berlin" in done.stdout or "deploy" in done.stdout.lower(), done.stdout
    version = subprocess.run(
        [str(env_dir / "bin" / "hivemem"), "--version"], env=clean, capture_output=True, text=True
    )
    assert version.returncode == 0 and "hivemem, version" in version.stdout

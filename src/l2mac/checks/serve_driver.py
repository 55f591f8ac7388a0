"""Run inside the sandbox, on the project's interpreter (as ``python -c``): start the program that serves, wait
until it listens, make the requests, stop it, and print what happened as one JSON line. Standard library only.

The listening port is read from ``/proc/net/tcp*``: the socket in LISTEN state whose inode one of the program's
processes holds, so the program may pick any port (its own default, ``PORT``, a flag) and a reloader child
counts too. Under bubblewrap the program has a network namespace of its own, loopback only.
"""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

LISTEN = "0A"


def group_pids(pgid: int) -> list[str]:
    pids: list[str] = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid:  # after the name: state, ppid, pgrp
                pids.append(name)
    return pids


def socket_inodes(pids: list[str]) -> set[str]:
    inodes: set[str] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def listening_port(pgid: int) -> int | None:
    inodes = socket_inodes(group_pids(pgid))
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == LISTEN and cols[9] in inodes:
                return int(cols[1].rsplit(":", 1)[1], 16)
    return None


def ask(port: int, method: str, path: str) -> int | str:
    data = b"{}" if method in ("POST", "PUT", "PATCH") else None
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as e:
        return int(e.code)
    except Exception as e:  # no answer at all: refused, reset, timed out
        return f"{type(e).__name__}: {e}"


def main() -> None:
    spec = json.loads(sys.argv[1])
    with socket.socket() as probe:  # a free port, for a program that reads its port from the environment
        probe.bind(("127.0.0.1", 0))
        env = dict(os.environ, PORT=str(probe.getsockname()[1]))
    with tempfile.TemporaryFile("w+", errors="replace") as log:
        proc = subprocess.Popen(spec["command"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        port: int | None = None
        deadline = time.monotonic() + spec["wait_s"]
        while port is None and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
            port = listening_port(proc.pid)
        answers = [[m, p, ask(port, m, p)] for m, p in spec["requests"]] if port is not None else []
        exited = proc.poll()
        with contextlib.suppress(ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=5)
        with contextlib.suppress(ProcessLookupError):  # children (a reloader, workers) too, whatever the leader did
            os.killpg(proc.pid, signal.SIGKILL)
        log.seek(0)
        output = log.read()[-3000:]
    print(json.dumps({"port": port, "exited": exited, "answers": answers, "output": output}))


if __name__ == "__main__":
    main()

"""The first process of a mock-service sandbox (stdlib only; runs inside bubblewrap).

Started by :mod:`envcraft.sandbox.services` as ``python3 launcher.py CONFIG``: it starts each
service (``argv``, ``env``, working directory ``cwd``) and, for each of their ports, relays
connections from the Unix socket ``<sockets>/<port>.sock`` (a directory the host sees) to
``127.0.0.1:<port>``: the services listen on the loopback of the sandbox's own network
namespace, which nothing else can reach. When a service exits, the launcher reports it on
stderr and exits, so the host sees a dead sandbox rather than a silent one.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time

CHUNK = 65536


def _pump(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(CHUNK)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _serve(client: socket.socket, port: int) -> None:
    try:
        upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
    except OSError:
        client.close()  # not listening yet: the host's health check tries again
        return
    upstream.settimeout(None)
    threading.Thread(target=_pump, args=(upstream, client), daemon=True).start()
    _pump(client, upstream)


def _relay(path: str, port: int) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    while True:
        client, _ = listener.accept()
        threading.Thread(target=_serve, args=(client, port), daemon=True).start()


def main() -> None:
    config = json.loads(sys.argv[1])
    procs = []
    for service in config["services"]:
        env = dict(config["env"])
        env.update(service["env"])
        with open("/tmp/" + service["name"] + ".log", "wb") as log:
            proc = subprocess.Popen(
                service["argv"], cwd=config["cwd"], env=env, stdout=subprocess.DEVNULL, stderr=log
            )
        procs.append((service["name"], proc))
        path = os.path.join(config["sockets"], "{}.sock".format(service["port"]))
        threading.Thread(target=_relay, args=(path, service["port"]), daemon=True).start()
    while True:
        for name, proc in procs:
            if proc.poll() is not None:
                with open("/tmp/" + name + ".log", "rb") as handle:
                    tail = handle.read()[-1500:].decode("utf-8", "replace")
                sys.stderr.write(f"service {name} exited ({proc.returncode}): {tail}\n")
                sys.stderr.flush()
                os._exit(1)
        time.sleep(0.2)


if __name__ == "__main__":
    main()

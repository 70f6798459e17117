import contextlib
import socket
import threading
import time

import pytest

uvicorn = pytest.importorskip("uvicorn")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running(make_app):
    """Serve `make_app(port)` with uvicorn on a free 127.0.0.1 port in a thread; yields the port.
    (The app must know its port: it answers only requests that name it, see client_server.guard.)"""
    port = free_port()
    app = make_app(port)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error",
                                           ws="websockets-sansio"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(timeout=10)

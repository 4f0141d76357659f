"""A TCP proxy on loopback that holds every new connection for `delay` seconds before forwarding it: a
Prometheus that answers slowly, for the deadline tests. Also counts the connections it accepted."""

from __future__ import annotations

import socket
import threading
from types import TracebackType
from typing import Self

__all__ = ["SlowProxy"]


class SlowProxy:
    def __init__(self, upstream: tuple[str, int], delay: float) -> None:
        self.upstream, self.delay = upstream, delay
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.05)  # so the accept loop sees close() promptly
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self._closed.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.settimeout(None)
            self.connections += 1
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            if self._closed.wait(self.delay):
                return
            with socket.create_connection(self.upstream) as upstream:
                pump = threading.Thread(target=_pump, args=(upstream, client), daemon=True)
                pump.start()
                _pump(client, upstream)
                pump.join(timeout=5)


def _pump(src: socket.socket, dst: socket.socket) -> None:
    try:
        while chunk := src.recv(65536):
            dst.sendall(chunk)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass

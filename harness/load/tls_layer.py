"""TLS for the lean streaming client, kept on its own raw socket: the handshake and record layer run in memory
(``ssl.SSLObject`` over two ``MemoryBIO``), so the connection still reads the socket in the event loop's reader
callback and the kernel still stamps each read's arrival (``harness.load.kernel_stamps``). An ``https://`` deployment
is then measured by the same client, stamping the same way, as a plain-HTTP server: only the decryption is added.

The certificate is checked as the origin was granted (``harness.endpoint_access``): the system's trust store, a CA
bundle, or (said in the report) not at all.
"""

from __future__ import annotations

import asyncio
import socket
import ssl

_READ_SIZE = 1 << 18


def client_context(verify: bool | ssl.SSLContext) -> ssl.SSLContext:
    """The context a connection's handshake uses: the granted one, the default one, or one that checks nothing."""
    if isinstance(verify, ssl.SSLContext):
        return verify
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


class TlsLayer:
    """One connection's TLS session: ``handshake`` once, then ``seal`` what is sent and ``open`` what arrives."""

    __slots__ = ("incoming", "outgoing", "session")

    def __init__(self, context: ssl.SSLContext, host: str) -> None:
        self.incoming, self.outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.session = context.wrap_bio(self.incoming, self.outgoing, server_hostname=host)

    async def handshake(self, loop: asyncio.AbstractEventLoop, sock: socket.socket) -> None:
        """Complete the handshake on the connected socket; ``ssl.SSLError`` (a certificate refused) or ``OSError``
        (the peer hung up) when it cannot."""
        while True:
            try:
                self.session.do_handshake()
                break
            except ssl.SSLWantReadError:
                pending = self.outgoing.read()
                if pending:
                    await loop.sock_sendall(sock, pending)
                data = await loop.sock_recv(sock, _READ_SIZE)
                if not data:
                    raise ConnectionResetError("the server closed the connection during the TLS handshake") from None
                self.incoming.write(data)
        pending = self.outgoing.read()
        if pending:
            await loop.sock_sendall(sock, pending)

    def seal(self, data: bytes) -> bytes:
        """``data`` as TLS records, ready for the socket."""
        self.session.write(data)
        return self.outgoing.read()

    def open(self, raw: bytes) -> tuple[bytes, bytes, bool]:
        """(plaintext, bytes to send back, closed) from what the socket read: a record may arrive in pieces (no
        plaintext yet), carry a ticket or a key update to answer, or be the peer's close."""
        self.incoming.write(raw)
        pieces: list[bytes] = []
        closed = False
        while True:
            try:
                piece = self.session.read(_READ_SIZE)
            except ssl.SSLWantReadError:
                break
            except ssl.SSLZeroReturnError:
                closed = True
                break
            if not piece:
                closed = True
                break
            pieces.append(piece)
        return b"".join(pieces), self.outgoing.read(), closed

# SPDX-License-Identifier: LGPL-2.1-or-later
"""A RESP (Redis protocol) client of one connection, one request in flight: what the Redis
outcome scripts need without the redis-py package."""

import socket


class Client:
    """One RESP connection to 127.0.0.1:port."""

    def __init__(self, port, timeout=120):
        self.sock = socket.create_connection(('127.0.0.1', port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b''

    def _line(self):
        while b'\r\n' not in self.buf:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError('redis closed the connection')
            self.buf += data
        line, self.buf = self.buf.split(b'\r\n', 1)
        return line

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b'-':
            raise RuntimeError(rest.decode())
        if kind == b'$':
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b'*':
            return [self._reply() for _ in range(int(rest))]
        return rest

    @staticmethod
    def encode(*args):
        parts = [f'*{len(args)}\r\n'.encode()]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            parts.append(b'$%d\r\n%s\r\n' % (len(a), a))
        return b''.join(parts)

    def call(self, *args):
        self.sock.sendall(self.encode(*args))
        return self._reply()

    def info(self, section):
        text = self.call('INFO', section).decode()
        return dict(line.split(':', 1) for line in text.splitlines() if ':' in line)

    def close(self):
        self.sock.close()

"""rddp_peer.py: a hostile iWARP initiator for the isolation tests, speaking
MPA (RFC 5044, revision 1, CRC on, no markers), DDP (RFC 5041) and RDMAP
(RFC 5040) itself, so that nothing in uwarp shapes what it sends.

One Conn is one TCP connection after the MPA exchange. It sends single-
segment messages (RDMA Write, Read Request, Send) and reads what comes back:
a Terminate's codes, a Read Response's bytes, or silence.
"""
import socket
import struct

# CRC32c (Castagnoli, reflected), as MPA uses it (RFC 5044 section 4.4)
_T = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _T.append(_c)


def crc32c(data):
    c = 0xFFFFFFFF
    for b in data:
        c = _T[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


# RDMAP opcodes (RFC 5040 section 4.3)
WRITE, READ_REQ, READ_RESP, SEND, TERMINATE = 0, 1, 2, 3, 7


def fpdu(ulpdu, crc=True):
    """ulpdu framed as an FPDU (RFC 5044 section 4.1): its length, itself,
    the pad to 4 bytes and, with crc, the CRC32c over all of that"""
    f = struct.pack(">H", len(ulpdu)) + ulpdu
    f += b"\0" * (-len(f) % 4)
    return f + struct.pack("<I", crc32c(f)) if crc else f


def untagged(opcode, qn, msn, body, mo=0):
    """an untagged DDP segment, the last of its message, with RDMAP
    revision 1 and opcode (RFC 5041 section 4.3, RFC 5040 section 4.1)"""
    return bytes([0x41, 0x40 | opcode]) + b"\0" * 4 + struct.pack(">III", qn, msn, mo) + body


class Refused(Exception):
    """the MPA exchange did not give a connection"""


class Conn:
    def __init__(self, host, port, private=b"", timeout=5.0):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.s.settimeout(timeout)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        # MPA Request: key, flags (M=0, C=1, R=0), revision 1, private data
        self.s.sendall(b"MPA ID Req Frame" + bytes([0x40, 1]) +
                       struct.pack(">H", len(private)) + private)
        hdr = self._exact(20)
        if hdr[:16] != b"MPA ID Rep Frame":
            raise Refused("no MPA Reply: %r" % hdr[:16])
        flags, rev, pdlen = hdr[16], hdr[17], struct.unpack(">H", hdr[18:20])[0]
        self.reply = self._exact(pdlen)
        if flags & 0x20:
            raise Refused("MPA Reject")
        if flags & 0x80:
            raise Refused("the peer wants markers; this peer has none")
        self.crc = True  # we asked for it, so both ends use it
        self.msn = {0: 1, 1: 1}  # per untagged queue

    def _exact(self, n):
        b = b""
        while len(b) < n:
            k = self.s.recv(n - len(b))
            if not k:
                raise EOFError("the peer closed")
            b += k
        return b

    def _fpdu(self, ulpdu):
        return fpdu(ulpdu, self.crc)

    def _untagged(self, opcode, qn, body):
        msn = self.msn[qn]
        self.msn[qn] += 1
        return untagged(opcode, qn, msn, body)

    def write(self, stag, to, data):
        """an RDMA Write of data to (stag, to), one segment"""
        u = bytes([0xC1, 0x40 | WRITE]) + struct.pack(">IQ", stag, to) + data
        self.s.sendall(self._fpdu(u))

    def read_req(self, src_stag, src_to, size, sink_stag=0x5100, sink_to=0):
        """an RDMA Read Request for size bytes at (src_stag, src_to)"""
        body = struct.pack(">IQIIQ", sink_stag, sink_to, size, src_stag, src_to)
        self.s.sendall(self._fpdu(self._untagged(READ_REQ, 1, body)))

    def send(self, data):
        self.s.sendall(self._fpdu(self._untagged(SEND, 0, data)))

    def next_fpdu(self):
        """(opcode, header fields, payload) of the next FPDU, or None at
        the close"""
        try:
            n = struct.unpack(">H", self._exact(2))[0]
            rest = self._exact(n + (-(n + 2) % 4) + (4 if self.crc else 0))
        except (EOFError, ConnectionResetError):
            return None
        u = rest[:n]
        opcode = u[1] & 0x0F
        if u[0] & 0x80:  # tagged
            stag, to = struct.unpack(">IQ", u[2:14])
            return opcode, {"stag": stag, "to": to}, u[14:]
        qn, msn, mo = struct.unpack(">III", u[6:18])
        return opcode, {"qn": qn, "msn": msn, "mo": mo}, u[18:]

    def outcome(self):
        """what the peer did next: ("terminate", (layer, etype, ecode)),
        ("read", bytes), ("closed", None) or ("silent", None)"""
        got = b""
        try:
            while True:
                f = self.next_fpdu()
                if f is None:
                    return ("read", got) if got else ("closed", None)
                opcode, h, payload = f
                if opcode == TERMINATE:
                    c = payload[0:2]
                    return "terminate", (c[0] >> 4, c[0] & 0xF, c[1])
                if opcode == READ_RESP:
                    got += payload
                    return "read", got
        except socket.timeout:
            return ("read", got) if got else ("silent", None)

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass

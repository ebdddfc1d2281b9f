"""fpdu_crc.py PCAP AFTER_FRAME PORT [SENDER_IP]: every MPA FPDU's CRC in a
capture, checked from the reassembled byte stream rather than by
Wireshark's dissector, which takes payload for headers where QEMU's user
network re-cut a stream into segments that do not start at FPDUs, and
then reports bad CRCs nobody sent (docs/wire-notes.md).

Each TCP connection with PORT at either end (0: every connection), in
the frames after AFTER_FRAME, is put back together in each direction
from its segments by sequence number. The stream opens with an MPA Request or Reply (RFC 5044
section 7.1); after it, each FPDU is a 2-byte ULPDU length, the ULPDU, a
pad to 4 bytes and, where either end's frame set the C bit, a CRC32c over
all of that (RFC 5044 sections 4.1 and 4.4). Streams with markers (the M
bit) are named and left out.

Prints a line for each direction and one for each bad FPDU. Exit status 1
when an FPDU sent from SENDER_IP (any sender if not given) has a bad CRC,
0 when none has, 2 when nothing could be checked.
"""
import os
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "hostile"))
from rddp_peer import crc32c  # noqa: E402

KEYS = (b"MPA ID Req Frame", b"MPA ID Rep Frame")
FLAG_M, FLAG_C = 0x80, 0x40


def segments(pcap, after, port):
    """{(stream, src, dst): [(relative seq, payload)]}"""
    only = " && tcp.port == %d" % port if port else ""
    out = subprocess.run(
        ["tshark", "-r", pcap, "-Y", "frame.number > %d && tcp.len > 0%s" % (after, only),
         "-T", "fields", "-e", "tcp.stream", "-e", "ip.src", "-e", "tcp.srcport",
         "-e", "ip.dst", "-e", "tcp.dstport", "-e", "tcp.seq", "-e", "tcp.payload"],
        capture_output=True, text=True, check=True).stdout
    dirs = {}
    for line in out.splitlines():
        f = line.split("\t")
        if len(f) < 7 or not f[6]:
            continue
        key = (int(f[0]), "%s:%s" % (f[1], f[2]), "%s:%s" % (f[3], f[4]))
        dirs.setdefault(key, []).append((int(f[5]), bytes.fromhex(f[6].replace(":", ""))))
    return dirs


def reassemble(segs):
    """the bytes from the stream's first payload on, up to the first hole
    (a segment the capture lost), and whether there was one"""
    segs.sort(key=lambda s: s[0])
    start = segs[0][0]
    buf = bytearray()
    for seq, data in segs:
        off = seq - start
        if off > len(buf):
            return bytes(buf), True
        buf += data[len(buf) - off:]  # a retransmission adds only what is new
    return bytes(buf), False


def mpa_frame(b):
    """(flags, length of the frame) of the MPA Request or Reply at b's
    start, or None"""
    if len(b) < 20 or b[:16] not in KEYS:
        return None
    return b[16], 20 + struct.unpack(">H", b[18:20])[0]


def fpdus(b, off, crc):
    """(index, offset, ULPDU length, CRC carried, CRC of the bytes) of each
    whole FPDU from off on"""
    i = 0
    while off + 2 <= len(b):
        n = struct.unpack(">H", b[off:off + 2])[0]
        body = 2 + n + (-(n + 2) % 4)
        end = off + body + (4 if crc else 0)
        if end > len(b):
            return
        i += 1
        if crc:
            carried = struct.unpack("<I", b[off + body:end])[0]
            yield i, off, n, carried, crc32c(b[off:off + body])
        else:
            yield i, off, n, None, None
        off = end


def main(argv):
    if len(argv) not in (4, 5):
        sys.stderr.write(__doc__)
        return 2
    pcap, after, port = argv[1], int(argv[2]), int(argv[3])
    sender = argv[4] if len(argv) == 5 else None
    dirs = segments(pcap, after, port)
    streams = {}
    for (s, src, dst), segs in dirs.items():
        data, hole = reassemble(segs)
        streams.setdefault(s, {})[src] = (dst, data, hole)
    bad_from_sender = checked = 0
    for s in sorted(streams):
        ends = streams[s]
        frames = {src: mpa_frame(d[1]) for src, d in ends.items()}
        if len(ends) != 2 or None in frames.values():
            print("stream %d: no MPA Request and Reply in the capture: left out" % s)
            continue
        flags = [f[0] for f in frames.values()]
        if any(f & FLAG_M for f in flags):
            print("stream %d: markers: left out" % s)
            continue
        crc = any(f & FLAG_C for f in flags)
        for src, (dst, data, hole) in sorted(ends.items()):
            n = bad = 0
            for i, off, ulen, carried, computed in fpdus(data, frames[src][1], crc):
                n = i
                if carried != computed:
                    bad += 1
                    print("  FPDU %d at stream offset %d (ULPDU %d bytes) carries CRC "
                          "0x%08x, its bytes give 0x%08x" % (i, off, ulen, carried, computed))
            checked += n
            print("stream %d %s -> %s: %d FPDUs%s, %d bad CRC%s" %
                  (s, src, dst, n, "" if crc else " (no CRC)", bad,
                   "; a segment the capture lost ends it at %d bytes" % len(data) if hole else ""))
            if bad and (sender is None or src.split(":")[0] == sender):
                bad_from_sender += bad
    if not checked:
        return 2
    return 1 if bad_from_sender else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/env python3
"""check_layers.py SOURCE_DIR: the tree's layering holds.

1. Layers call downwards only: esock -> exs -> runtime -> rdmap -> ddp ->
   mpa (udapl beside exs, on the runtime). A file includes headers of its
   own layer or of layers below it, never one above: the pure protocol
   code cannot reach the runtime's objects, and the runtime cannot reach
   the ES-API that runs over it. A header of another folder is named by
   its folder ("mpa/fpdu.h"); only include/ and the root are on the
   include path.
2. The protocol layers (mpa/, ddp/, rdmap/, and the ES-API's protocol
   files exs/stream_proto.*, exs/exs_wire.* and exs/exs_fin.*, and the
   runtime's connection life, runtime/conn_life.*) are pure: no sockets, no
   event loop, no clocks, no threads, no file descriptors. Their headers
   from the C library are checked against a list of what pure code needs.

3. Below esock nothing calls up into it: the runtime and the ES-API (runtime/,
   exs/) make the descriptor calls esock replaces for programs (socket,
   connect, read, close, poll, ...) only through util/sys.h, which reaches
   the C library directly, never by the names a preloaded library takes
   over. (exs_poll's own name aside: the check reads code, not comments or
   strings.)
4. rdma/ (rdma-core's libibverbs made of uwarp) stands on the verbs
   runtime's public API alone: it includes uwarp's public headers and its
   own, never a header of another folder, so what it can do any program
   written to uwarp/verbs.h can. One file of it is a socket API and stands
   above esock: librdmacm's rsockets calls (rdma/rdmacm/cma_rsocket.c),
   which rdma-core ships in librdmacm and uwarp carries with esock's
   public calls (FILE_LAYER).

Prints each breach with its file and line; exits 1 if there is any.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else "."

# the layers, lowest first; a public header belongs to the layer it serves
LAYERS = ["util", "mpa", "ddp", "rdmap", "runtime", "exs", "esock"]
RANK = {name: i for i, name in enumerate(LAYERS)}
RANK["udapl"] = RANK["exs"]  # a peer of exs: both stand on the runtime
RANK["rdma"] = RANK["exs"]  # likewise, through the public API only (rule 4)
PUBLIC = {"uwarp/wire.h": "util", "uwarp/verbs.h": "runtime", "uwarp/ep.h": "runtime",
          "exs.h": "exs", "esock.h": "esock"}
# files whose layer is not their folder's
FILE_LAYER = {"rdma/rdmacm/cma_rsocket.c": "esock"}
PURE_DIRS = ["mpa", "ddp", "rdmap"]
PURE_FILES = ["exs/stream_proto.c", "exs/stream_proto.h", "exs/exs_wire.c", "exs/exs_wire.h",
              "exs/exs_fin.c", "exs/exs_fin.h", "runtime/conn_life.c", "runtime/conn_life.h"]
# what pure code may take from the C library: no I/O, time or threads
PURE_SYSTEM = {"errno.h", "limits.h", "stdbool.h", "stddef.h", "stdint.h", "stdlib.h",
               "string.h", "sys/types.h", "sys/uio.h", "assert.h", "isa-l/crc.h"}
# the util headers that read the clock or make descriptors
IMPURE_UTIL = {"util/clock.h", "util/evfd.h"}
# one exception, and why: the portable CRC builds its tables once, on
# first use, from whichever thread comes first
PURE_EXCEPTIONS = {("mpa/crc32c_sb8.c", "pthread.h")}

# the calls esock replaces that the layers below it make (util/sys.h)
SEAM_DIRS = ["runtime", "exs"]
SEAM_CALLS = re.compile(r"(?<![A-Za-z0-9_.>])(socket|connect|bind|listen|accept4?|setsockopt|"
                        r"getsockopt|getsockname|getpeername|shutdown|close|read|readv|write|"
                        r"writev|recv|recvmsg|send|sendmsg|sendto|recvfrom|fcntl|ioctl|poll|"
                        r"ppoll|select|pselect|epoll_ctl|dup[23]?)\s*\(")
COMMENTS_AND_STRINGS = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'',
                                  re.S)

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def sources(d):
    for base, _, files in os.walk(os.path.join(ROOT, d)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(base, f), ROOT)


def header_home(path, name):
    """the layer a project header named in quotes belongs to: "layer/x.h"
    names it; a bare "x.h" is the including file's neighbour (the only
    place the compiler looks for it: no source folder is on the include
    path, only include/ and the root). None: not a project header."""
    if "/" in name:
        top = name.split("/")[0]
        return top if top in RANK else None
    if os.path.exists(os.path.join(ROOT, os.path.dirname(path), name)):
        return path.split("/")[0]
    return None


def includes(path):
    with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1), m.group(2)


def main():
    breaches = []
    for folder in RANK:
        for path in sources(folder):
            layer = FILE_LAYER.get(path, folder)
            for n, kind, name in includes(path):
                if name in PUBLIC:
                    home = PUBLIC[name]
                elif kind == '"':
                    home = header_home(path, name)
                    if home is None and "/" not in name:
                        breaches.append("%s:%d: %s is neither beside it nor named by its "
                                        "folder" % (path, n, name))
                        continue
                else:
                    continue
                if folder == "rdma" and home not in (None, "rdma") and name not in PUBLIC:
                    breaches.append("%s:%d: rdma/ includes %s: only uwarp's public API"
                                    % (path, n, name))
                if home is not None and RANK[home] > RANK[layer]:
                    breaches.append("%s:%d: layer %s includes %s, of %s, a layer above"
                                    % (path, n, layer, name, home))
    pure = [p for d in PURE_DIRS for p in sources(d)] + \
        [p for p in PURE_FILES if os.path.exists(os.path.join(ROOT, p))]
    for path in pure:
        for n, kind, name in includes(path):
            if kind == "<" and name not in PURE_SYSTEM and name not in PUBLIC and \
                    (path, name) not in PURE_EXCEPTIONS:
                breaches.append("%s:%d: pure code includes <%s>" % (path, n, name))
            if kind == '"' and name in IMPURE_UTIL:
                breaches.append("%s:%d: pure code includes %s" % (path, n, name))
    for d in SEAM_DIRS:
        for path in sources(d):
            with open(os.path.join(ROOT, path), encoding="utf-8", errors="replace") as f:
                text = f.read()
            # comments and strings blanked, line breaks kept
            code = COMMENTS_AND_STRINGS.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)
            for m in SEAM_CALLS.finditer(code):
                line = code.count("\n", 0, m.start()) + 1
                breaches.append("%s:%d: calls %s() by the C library's name, which a preloaded "
                                "library may replace: util/sys.h" % (path, line, m.group(1)))
    for b in breaches:
        print("FAIL " + b)
    checked = sum(1 for layer in RANK for _ in sources(layer))
    if breaches:
        print("%d breaches in %d files" % (len(breaches), checked))
        return 1
    print("ok   %d files: every include goes to its own layer or below; %d pure files "
          "use no sockets, loop, clock or thread; runtime/ and exs/ reach descriptors "
          "through util/sys.h" % (checked, len(pure)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

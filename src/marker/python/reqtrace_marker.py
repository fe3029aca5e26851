# SPDX-License-Identifier: BSD-2-Clause
"""reqtrace phase markers for Python engines (ctypes binding of libreqtrace_marker.so).

Each call hands its record to the reqtrace daemon through shared memory
(docs/markers.md), or is seen by a uprobe; with nothing attached it costs a
ctypes call. The library is found through the
REQTRACE_MARKER_LIB environment variable (a path), else by its soname
libreqtrace_marker.so.1 on the loader's path. When it cannot be loaded every
function is a silent no-op and AVAILABLE is False, so an engine can always
import this module.

    import reqtrace_marker as rm
    with rm.phase(request_id, rm.TOKENIZE):
        tokens = tokenizer(prompt)
    rm.step_begin(step_id, [r.id for r in batch]); ...; rm.step_end(step_id)
"""

import contextlib
import ctypes
import ctypes.util
import os

# enum rt_phase (include/reqtrace/phase.h): ABI, append only.
RECEIVE = 0
QUEUE = 1
TOKENIZE = 2
PREFILL = 3
PRE_FIRST_TOKEN = 4
DECODE = 5
COMM_WAIT = 6
POSTPROCESS = 7
OTHER = 8

STEP_MAX = 256  # RT_MARK_STEP_MAX: ids past this do not reach the tracer
ID_MAX = 63  # bytes of an id the probe reads

ABI_VERSION = 1  # the oldest library it works with (2 adds step_begin_tokens)


def _load():
    names = []
    env = os.environ.get("REQTRACE_MARKER_LIB")
    if env:
        names.append(env)
    names.append("libreqtrace_marker.so.1")
    found = ctypes.util.find_library("reqtrace_marker")
    if found:
        names.append(found)
    for name in names:
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.rt_mark_begin.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.rt_mark_begin.restype = None
        lib.rt_mark_end.argtypes = [ctypes.c_char_p, ctypes.c_int]
        lib.rt_mark_end.restype = None
        lib.rt_mark_step_begin.argtypes = [
            ctypes.c_uint64,
            ctypes.c_uint32,
            ctypes.POINTER(ctypes.c_char_p),
        ]
        lib.rt_mark_step_begin.restype = None
        if hasattr(lib, "rt_mark_step_begin_tokens"):  # ABI 2
            lib.rt_mark_step_begin_tokens.argtypes = [
                ctypes.c_uint64,
                ctypes.c_uint32,
                ctypes.POINTER(ctypes.c_char_p),
                ctypes.POINTER(ctypes.c_uint32),
            ]
            lib.rt_mark_step_begin_tokens.restype = None
        lib.rt_mark_step_end.argtypes = [ctypes.c_uint64]
        lib.rt_mark_step_end.restype = None
        lib.rt_mark_bind.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.rt_mark_bind.restype = None
        lib.rt_mark_abi_version.argtypes = []
        lib.rt_mark_abi_version.restype = ctypes.c_uint32
        if lib.rt_mark_abi_version() < ABI_VERSION:
            continue
        return lib
    return None


_lib = _load()
AVAILABLE = _lib is not None


def _b(s):
    if s is None:
        return None
    return s if isinstance(s, bytes) else str(s).encode("utf-8", "replace")


def abi_version():
    """The loaded library's ABI version, 0 when none is loaded."""
    return _lib.rt_mark_abi_version() if _lib else 0


def begin(request_id, phase):
    """request_id enters phase on the calling thread."""
    if _lib:
        _lib.rt_mark_begin(_b(request_id), int(phase))


def end(request_id, phase):
    """request_id leaves phase."""
    if _lib:
        _lib.rt_mark_end(_b(request_id), int(phase))


def step_begin(step_id, request_ids):
    """An engine step starts on the calling thread, working for request_ids."""
    if not _lib:
        return
    ids = [_b(i) for i in request_ids]
    arr = (ctypes.c_char_p * max(len(ids), 1))(*ids)
    _lib.rt_mark_step_begin(int(step_id), len(ids), arr)


def step_begin_tokens(step_id, request_ids, tokens):
    """step_begin, with the tokens each request advances in the step (GPU time is split by
    them); a library older than ABI 2 gets a plain step_begin."""
    if not _lib:
        return
    if not hasattr(_lib, "rt_mark_step_begin_tokens"):
        step_begin(step_id, request_ids)
        return
    ids = [_b(i) for i in request_ids]
    arr = (ctypes.c_char_p * max(len(ids), 1))(*ids)
    tok = (ctypes.c_uint32 * max(len(ids), 1))(*[int(t) for t in tokens][:len(ids)])
    _lib.rt_mark_step_begin_tokens(int(step_id), len(ids), arr, tok)


def step_end(step_id):
    """The step ends."""
    if _lib:
        _lib.rt_mark_step_end(int(step_id))


def bind(engine_id, request_id):
    """The engine calls request_id engine_id from now on."""
    if _lib:
        _lib.rt_mark_bind(_b(engine_id), _b(request_id))


@contextlib.contextmanager
def phase(request_id, ph):
    """with phase(rid, TOKENIZE): ... marks begin on entry and end on exit."""
    begin(request_id, ph)
    try:
        yield
    finally:
        end(request_id, ph)


@contextlib.contextmanager
def step(step_id, request_ids):
    """with step(n, ids): ... marks a step around the block."""
    step_begin(step_id, request_ids)
    try:
        yield
    finally:
        step_end(step_id)

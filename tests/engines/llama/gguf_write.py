#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Write a tiny random-weight llama-architecture GGUF file (no download).

Pure struct packing, no numpy: the model only has to load in llama.cpp and
produce tokens quickly on two CPU threads; what it says is noise. The
layout follows the GGUF v3 format (header, key/value metadata, tensor
infos, aligned data) and the key and tensor names llama.cpp's loader asks
for the "llama" architecture.

The vocabulary is a SentencePiece-style ("llama") one: <unk>, <s>, </s>,
the 256 byte-fallback tokens (the loader looks up <0x0A> for the line
feed) and a few hundred word pieces, so any text tokenizes.

usage: gguf_write.py OUT.gguf [--seed N] [--layers N] [--embd N] [--ff N]
"""

import argparse
import random
import struct
import sys

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
ALIGN = 32

# metadata value types (gguf spec)
T_UINT32, T_INT32, T_FLOAT32, T_BOOL, T_STRING, T_ARRAY = 4, 5, 6, 7, 8, 9
# tensor types
GGML_F32, GGML_F16 = 0, 1
# llama.cpp token types
TOK_NORMAL, TOK_UNKNOWN, TOK_CONTROL, TOK_BYTE = 1, 2, 3, 6

WORDS = """the a an and or of to in on at for with from by is are was were be been
it this that these those he she they we you i me him her them us my your our
their what which who when where why how not no yes all any some many much more
most other such only own same so than too very can will just should now one two
three four five six seven eight nine ten time day year way man woman child world
life hand part place case week company system program question work government
number night point home water room mother area money story fact month lot right
study book eye job word business issue side kind head house service friend father
power hour game line end member law car city community name president team minute
idea kid body information back parent face others level office door health person
art war history party result change morning reason research girl guy moment air
teacher force education hello request token model server trace span test fast slow
""".split()


def s_str(s):
    b = s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def kv(key, vtype, value):
    out = s_str(key) + struct.pack("<I", vtype)
    if vtype == T_UINT32:
        out += struct.pack("<I", value)
    elif vtype == T_INT32:
        out += struct.pack("<i", value)
    elif vtype == T_FLOAT32:
        out += struct.pack("<f", value)
    elif vtype == T_BOOL:
        out += struct.pack("<B", 1 if value else 0)
    elif vtype == T_STRING:
        out += s_str(value)
    else:
        raise ValueError(vtype)
    return out


def kv_array(key, etype, values):
    out = s_str(key) + struct.pack("<IIQ", T_ARRAY, etype, len(values))
    if etype == T_STRING:
        out += b"".join(s_str(v) for v in values)
    elif etype == T_FLOAT32:
        out += struct.pack("<%df" % len(values), *values)
    elif etype == T_INT32:
        out += struct.pack("<%di" % len(values), *values)
    else:
        raise ValueError(etype)
    return out


def vocab():
    toks = ["<unk>", "<s>", "</s>"]
    types = [TOK_UNKNOWN, TOK_CONTROL, TOK_CONTROL]
    scores = [0.0, 0.0, 0.0]
    for b in range(256):
        toks.append("<0x%02X>" % b)
        types.append(TOK_BYTE)
        scores.append(0.0)
    pieces = []
    # SentencePiece merges neighbouring pieces only into pieces that exist,
    # so every prefix of a word must be a token for the word to come out whole
    for w in WORDS:
        full = "\u2581" + w
        pieces += [full[:k] for k in range(2, len(full) + 1)]
    for c in "abcdefghijklmnopqrstuvwxyz.,!?":
        pieces.append(c)
        pieces.append("\u2581" + c)
    pieces.append("\u2581")
    seen = set(toks)
    for i, p in enumerate(pieces):
        if p in seen:
            continue
        seen.add(p)
        toks.append(p)
        types.append(TOK_NORMAL)
        # longer pieces score higher, so whole words win over letters
        scores.append(-1000.0 + 10.0 * len(p) - i * 1e-3)
    return toks, scores, types


def f16_bytes(rng, n, scale):
    # struct's 'e' is IEEE half precision
    return struct.pack("<%de" % n, *(rng.gauss(0.0, scale) for _ in range(n)))


def f32_bytes(rng, n, scale, const=None):
    if const is not None:
        return struct.pack("<%df" % n, *([const] * n))
    return struct.pack("<%df" % n, *(rng.gauss(0.0, scale) for _ in range(n)))


def build(args):
    rng = random.Random(args.seed)
    toks, scores, types = vocab()
    n_vocab = len(toks)
    E, F, H, L = args.embd, args.ff, args.heads, args.layers
    if E % H:
        raise SystemExit("embd must be a multiple of heads")

    meta = [
        kv("general.architecture", T_STRING, "llama"),
        kv("general.name", T_STRING, "reqtrace-tiny-random"),
        kv("general.alignment", T_UINT32, ALIGN),
        kv("llama.context_length", T_UINT32, args.ctx),
        kv("llama.embedding_length", T_UINT32, E),
        kv("llama.block_count", T_UINT32, L),
        kv("llama.feed_forward_length", T_UINT32, F),
        kv("llama.attention.head_count", T_UINT32, H),
        kv("llama.attention.head_count_kv", T_UINT32, H),
        kv("llama.attention.layer_norm_rms_epsilon", T_FLOAT32, 1e-5),
        kv("llama.rope.dimension_count", T_UINT32, E // H),
        kv("llama.rope.freq_base", T_FLOAT32, 10000.0),
        kv("llama.vocab_size", T_UINT32, n_vocab),
        kv("tokenizer.ggml.model", T_STRING, "llama"),
        kv_array("tokenizer.ggml.tokens", T_STRING, toks),
        kv_array("tokenizer.ggml.scores", T_FLOAT32, scores),
        kv_array("tokenizer.ggml.token_type", T_INT32, types),
        kv("tokenizer.ggml.unknown_token_id", T_UINT32, 0),
        kv("tokenizer.ggml.bos_token_id", T_UINT32, 1),
        kv("tokenizer.ggml.eos_token_id", T_UINT32, 2),
        kv("tokenizer.ggml.add_bos_token", T_BOOL, True),
        kv("tokenizer.ggml.add_eos_token", T_BOOL, False),
    ]

    # (name, ne (innermost first), type, norm?) -- matmul weights are
    # [n_in, n_out] in ggml's order; norms are F32 ones
    tensors = [("token_embd.weight", (E, n_vocab), GGML_F16, False)]
    for i in range(L):
        p = "blk.%d." % i
        tensors += [
            (p + "attn_norm.weight", (E,), GGML_F32, True),
            (p + "attn_q.weight", (E, E), GGML_F16, False),
            (p + "attn_k.weight", (E, E), GGML_F16, False),
            (p + "attn_v.weight", (E, E), GGML_F16, False),
            (p + "attn_output.weight", (E, E), GGML_F16, False),
            (p + "ffn_norm.weight", (E,), GGML_F32, True),
            (p + "ffn_gate.weight", (E, F), GGML_F16, False),
            (p + "ffn_up.weight", (E, F), GGML_F16, False),
            (p + "ffn_down.weight", (F, E), GGML_F16, False),
        ]
    tensors += [("output_norm.weight", (E,), GGML_F32, True),
                ("output.weight", (E, n_vocab), GGML_F16, False)]

    infos = b""
    blobs = []
    offset = 0
    for name, ne, typ, norm in tensors:
        n = 1
        for d in ne:
            n *= d
        if typ == GGML_F32:
            data = f32_bytes(rng, n, 0.0, const=1.0 if norm else None)
        else:
            data = f16_bytes(rng, n, 1.0 / (ne[0] ** 0.5))
        infos += s_str(name) + struct.pack("<I", len(ne))
        infos += struct.pack("<%dQ" % len(ne), *ne)
        infos += struct.pack("<IQ", typ, offset)
        pad = (-len(data)) % ALIGN
        blobs.append(data + b"\0" * pad)
        offset += len(data) + pad

    head = GGUF_MAGIC + struct.pack("<IQQ", GGUF_VERSION, len(tensors), len(meta))
    head += b"".join(meta) + infos
    head += b"\0" * ((-len(head)) % ALIGN)
    return head + b"".join(blobs), n_vocab, len(tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--embd", type=int, default=64)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--ff", type=int, default=128)
    ap.add_argument("--ctx", type=int, default=2048)
    args = ap.parse_args()
    blob, n_vocab, n_tensors = build(args)
    tmp = args.out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    import os
    os.replace(tmp, args.out)
    sys.stderr.write("gguf_write: %s: %d bytes, %d tensors, vocab %d\n"
                     % (args.out, len(blob), n_tensors, n_vocab))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""The test server's encoder against the golden vectors derived by hand in
docs/engines/vllm-v1.md (G1-G3, read from the pinned vLLM source without this
encoder), byte for byte; plus decode round trips and the trailing-defaults
switch. A unit test: no server, no BPF."""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("RT_SOURCE_DIR", os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, HERE)
import vmsg  # noqa: E402

fails = []


def check(cond, msg):
    print(("ok:   " if cond else "FAIL: ") + msg)
    if not cond:
        fails.append(msg)


def golden(name):
    """The hex dump under the doc's '### <name> ' heading."""
    with open(os.path.join(SRC, "docs", "engines", "vllm-v1.md")) as f:
        text = f.read()
    sec = text.split("### " + name + " ", 1)[1]
    dump = sec.split("```", 2)[1]
    hexes = []
    for line in dump.strip().splitlines():
        hexes += line.split(":", 1)[1].split()
    return bytes(int(h, 16) for h in hexes)


g1 = vmsg.encode_request({
    "request_id": "chatcmpl-r1-0a1b2c3d", "prompt_token_ids": [1, 15043, 2],
    "mm_features": None,
    "sampling_params": {"max_tokens": 8, "output_kind": vmsg.DELTA, "_eos_token_id": 2,
                        "_all_stop_token_ids": [2]},
    "pooling_params": None, "eos_token_id": 2, "arrival_time": 1700000000.25,
    "lora_request": None, "cache_salt": None, "data_parallel_rank": None,
    "external_req_id": "chatcmpl-r1"})
check(g1 == golden("G1"), "ADD payload == G1 (%d bytes)" % len(g1))
check(vmsg.sampling_params(8, vmsg.DELTA, 2) == {"max_tokens": 8, "output_kind": 1,
                                                 "_eos_token_id": 2, "_all_stop_token_ids": [2]},
      "sampling_params() gives G1's map")

g2 = vmsg.encode_outputs({"outputs": [
    {"request_id": "chatcmpl-r1-0a1b2c3d", "new_token_ids": [450]},
    {"request_id": "cmpl-r2-0-9f8e7d6c", "new_token_ids": [13]}], "timestamp": 12345.5})
check(g2 == golden("G2"), "EngineCoreOutputs (log_stats off) == G2 (%d bytes)" % len(g2))

g3 = vmsg.encode_outputs({"outputs": [
    {"request_id": "cmpl-r3-0-11223344", "new_token_ids": [9906],
     "events": [vmsg.event(vmsg.QUEUED, 100.0), vmsg.event(vmsg.SCHEDULED, 100.5)],
     "num_cached_tokens": 16},
    {"request_id": "chatcmpl-r1-0a1b2c3d", "new_token_ids": [2], "finish_reason": vmsg.STOP}],
    "scheduler_stats": {"num_running_reqs": 2, "num_waiting_reqs": 0}, "timestamp": 12346.0})
check(g3 == golden("G3"), "EngineCoreOutputs (log_stats on, events, finish) == G3 (%d bytes)"
      % len(g3))

ab = vmsg.encode_abort(["chatcmpl-r1-0a1b2c3d"])
check(ab.hex() == "91b4" + b"chatcmpl-r1-0a1b2c3d".hex(), "ABORT payload: array of one id")

d = vmsg.decode_outputs(g3)
check(d["outputs"][0]["events"][1] == {"type": 2, "timestamp": 100.5} and
      d["outputs"][1]["finish_reason"] == 0 and d["timestamp"] == 12346.0,
      "G3 decodes back to its fields")
check(vmsg.decode_request(g1)["external_req_id"] == "chatcmpl-r1", "G1 decodes back")

vmsg.OMIT_TRAILING_DEFAULTS = True
short = vmsg.encode_outputs({"outputs": [{"request_id": "a", "new_token_ids": [1]}],
                             "timestamp": 1.5})
check(short.hex() == "94" "00" "91" "92a161" "9101" "c0" "cb3ff8000000000000",
      "trailing-defaults switch: EngineCoreOutputs shortened to 4 fields, output to 2 (%s)"
      % short.hex())
check(vmsg.decode_outputs(short)["outputs"][0]["num_nans_in_logits"] == 0,
      "a short array decodes with the defaults")
req = vmsg.encode_request({"request_id": "x", "prompt_token_ids": [5], "arrival_time": 2.0})
check(req[0] == 0x9a, "a request without trailing optional fields is a fixarray of 10")
vmsg.OMIT_TRAILING_DEFAULTS = False
check(vmsg.ENGINE_CORE_DEAD == b"ENGINE_CORE_DEAD", "the death sentinel's 16 bytes")

print("FAILED: %d" % len(fails) if fails else "PASS")
sys.exit(1 if fails else 0)

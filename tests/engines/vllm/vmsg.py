# SPDX-License-Identifier: BSD-2-Clause
"""The vLLM V1 API-server <-> engine-core messages, encoded by hand.

Written from vllm-project/vllm at commit 364631ab07d283c4f08db0544a2653c5b415a427
(vllm/v1/engine/__init__.py, vllm/v1/serial_utils.py; docs/engines/vllm-v1.md).
vLLM encodes with msgspec; msgspec is not packaged in Debian, so the same bytes
are produced here with python3-msgpack: array_like structs are msgpack arrays in
field-declaration order, plain structs and SamplingParams are maps, floats are
float64, ints take their smallest form (msgpack-python and msgspec agree on
both). Field order for each message: tests/engines/vllm/messages.md.
"""

import msgpack

# EngineCoreRequestType: the first byte of the frame after the routing id
ADD, ABORT, START_DP_WAVE, UTILITY = b"\x00", b"\x01", b"\x02", b"\x03"
ENGINE_CORE_DEAD = b"ENGINE_CORE_DEAD"

# EngineCoreEventType
QUEUED, SCHEDULED, PREEMPTED = 1, 2, 3
# FinishReason
STOP, LENGTH, ABORTED, ERROR = 0, 1, 2, 3
# RequestOutputKind (SamplingParams.output_kind)
CUMULATIVE, DELTA, FINAL_ONLY = 0, 1, 2

# serial_utils.py extension type codes (only listed: no tensor crosses here)
EXT_PICKLE, EXT_CLOUDPICKLE, EXT_RAW_VIEW = 1, 2, 3

# (name, has_default, default) in declaration order
REQUEST_FIELDS = (
    ("request_id", False, None), ("prompt_token_ids", False, None),
    ("mm_features", False, None), ("sampling_params", False, None),
    ("pooling_params", False, None), ("eos_token_id", False, None),
    ("arrival_time", False, None), ("lora_request", False, None),
    ("cache_salt", False, None), ("data_parallel_rank", False, None),
    ("prompt_embeds", True, None), ("client_index", True, 0),
    ("current_wave", True, 0), ("priority", True, 0),
    ("trace_headers", True, None), ("external_req_id", True, None),
)
OUTPUT_FIELDS = (
    ("request_id", False, None), ("new_token_ids", False, None),
    ("new_logprobs", True, None), ("new_prompt_logprobs_tensors", True, None),
    ("pooling_output", True, None), ("finish_reason", True, None),
    ("stop_reason", True, None), ("events", True, None),
    ("kv_transfer_params", True, None), ("trace_headers", True, None),
    ("num_cached_tokens", True, 0), ("routed_experts", True, None),
    ("num_nans_in_logits", True, 0),
)
OUTPUTS_FIELDS = (
    ("engine_index", True, 0), ("outputs", True, []),
    ("scheduler_stats", True, None), ("timestamp", True, 0.0),
    ("utility_output", True, None), ("finished_requests", True, None),
    ("wave_complete", True, None), ("start_wave", True, None),
)

# msgspec issue #720 (open at the pinned time): omit_defaults does not shorten
# array_like structs, so every field is written. The other reading (trailing
# defaults dropped) is kept behind this switch so a decoder can be tested
# against both lengths.
OMIT_TRAILING_DEFAULTS = False


def _as_array(fields, values):
    arr = [values.get(name, default) for name, _, default in fields]
    if OMIT_TRAILING_DEFAULTS:
        while arr:
            name, has_default, default = fields[len(arr) - 1]
            if not has_default or arr[-1] != default:
                break
            arr.pop()
    return arr


def _from_array(fields, arr):
    out = {}
    for i, (name, _, default) in enumerate(fields):
        out[name] = arr[i] if i < len(arr) else default
    return out


def _ext_hook(code, data):
    raise ValueError("unexpected msgpack ext type %d" % code)


def packb(obj):
    return msgpack.packb(obj, use_bin_type=True)


def unpackb(b):
    return msgpack.unpackb(b, raw=False, strict_map_key=False, ext_hook=_ext_hook,
                           use_list=True)


def sampling_params(max_tokens, output_kind, eos_token_id, temperature=None):
    """SamplingParams (omit_defaults, map): only non-default fields, in declaration
    order of the ones we set (temperature < max_tokens < output_kind < _eos_token_id
    < _all_stop_token_ids). A real map carries more keys; a decoder skips them."""
    sp = {}
    if temperature is not None and temperature != 1.0:
        sp["temperature"] = float(temperature)
    if max_tokens != 16:
        sp["max_tokens"] = max_tokens
    if output_kind != CUMULATIVE:
        sp["output_kind"] = output_kind
    sp["_eos_token_id"] = eos_token_id
    sp["_all_stop_token_ids"] = [eos_token_id]
    return sp


def encode_request(req):
    """EngineCoreRequest -> the payload frame (frame 2 after id and type)."""
    return packb(_as_array(REQUEST_FIELDS, req))


def decode_request(b):
    return _from_array(REQUEST_FIELDS, unpackb(b))


def encode_abort(internal_ids):
    return packb(list(internal_ids))


def event(kind, ts):
    # EngineCoreEvent is a plain msgspec.Struct: a map with both keys
    return {"type": kind, "timestamp": float(ts)}


def encode_outputs(outs):
    """EngineCoreOutputs: outs is a dict; outs["outputs"] a list of dicts."""
    d = dict(outs)
    d["outputs"] = [_as_array(OUTPUT_FIELDS, o) for o in outs.get("outputs", [])]
    d["timestamp"] = float(d.get("timestamp", 0.0))
    return packb(_as_array(OUTPUTS_FIELDS, d))


def decode_outputs(b):
    d = _from_array(OUTPUTS_FIELDS, unpackb(b))
    d["outputs"] = [_from_array(OUTPUT_FIELDS, o) for o in (d["outputs"] or [])]
    return d

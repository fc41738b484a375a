"""Stand-in for ttnn (tests only): the device calls of the generator and of
the stand-in model, over torch tensors on one simulated device.

The names and call shapes are the ones tenstorrent/tt-metal
models/tt_transformers/tt/generator.py makes at commit
50868c00281366b286bdf5ccb7b50c4b7b56cef1 (to_torch, get_device_tensors,
from_torch, to_device, copy_host_to_device_tensor, begin/end_trace_capture,
execute_trace, synchronize_device, untilize, to_layout, reshape,
record_event, release_trace, ShardTensorToMesh) and the ones its own keep
test models/tt_transformers/tests/test_async_ahead_token_keep_decode.py
(same commit) makes (ReplicateTensorToMesh, unsqueeze_to_4D, copy); tt-metal
models advance decode positions with `ttnn.plus_one(current_pos,
skip_negative_entries=True)`. The semantics are ours and only as deep as
the tests need:

  - a Tensor holds a torch tensor; `device` is None on the host;
  - between begin_trace_capture and end_trace_capture an op is recorded,
    not run (as a captured trace is), and execute_trace runs the recorded
    ops again over the same tensors, so a value written inside the trace
    (the sampled token, the position moved on) stays in the trace inputs
    after the call: that is what makes them an async-ahead buffer;
  - ops outside a capture run at once.
"""

import itertools

import torch

uint32 = "uint32"
int32 = "int32"
bfloat16 = "bfloat16"
bfloat8_b = "bfloat8_b"
ROW_MAJOR_LAYOUT = "ROW_MAJOR"
TILE_LAYOUT = "TILE"
DRAM_MEMORY_CONFIG = "DRAM"
L1_MEMORY_CONFIG = "L1"

# Integer device types are held as int64 (torch 1.13 has no uint32).
_TORCH = {uint32: torch.int64, int32: torch.int64, bfloat16: torch.float32,
          bfloat8_b: torch.float32}


class MeshShape(tuple):
    def __new__(cls, *dims):
        return super().__new__(cls, dims)


class MeshDevice:
    """One simulated device and the traces captured on it."""

    def __init__(self, shape=(1, 1)):
        self.shape = MeshShape(*shape)
        self._traces = {}
        self._capture = None
        self._ids = itertools.count()

    def get_num_devices(self):
        n = 1
        for d in self.shape:
            n *= d
        return n


class ReplicateTensorToMesh:
    def __init__(self, mesh_device):
        self.mesh_device = mesh_device


class ShardTensorToMesh:
    def __init__(self, mesh_device, dim=0):
        self.mesh_device = mesh_device
        self.dim = dim


class Tensor:
    def __init__(self, value, device=None, dtype=None):
        self.value = value
        self.device = device
        self.dtype = dtype

    @property
    def shape(self):
        return tuple(self.value.shape)

    def cpu(self, blocking=True):
        return Tensor(self.value.clone(), None, self.dtype)

    def __getitem__(self, idx):
        return Tensor(self.value[idx], self.device, self.dtype)

    def __repr__(self):
        return "ttnn.Tensor(%r, %s)" % (self.value.tolist(), "device" if self.device else "host")


def _issue(device, fn):
    """Runs an op now, or records it when `device` is capturing a trace."""
    if device is not None and device._capture is not None:
        device._capture.append(fn)
    else:
        fn()


def from_torch(t, device=None, dtype=None, layout=None, mesh_mapper=None, memory_config=None,
               **kwargs):
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(t)
    return Tensor(t.detach().clone().to(_TORCH.get(dtype, t.dtype)), device, dtype)


def to_torch(t, mesh_composer=None, **kwargs):
    return t.value.clone()


def get_device_tensors(t):
    return [t]


def to_device(t, device, memory_config=None, **kwargs):
    return Tensor(t.value.clone(), device, t.dtype)


def copy_host_to_device_tensor(host, device_tensor, cq_id=0):
    if tuple(host.value.shape) != tuple(device_tensor.value.shape):
        raise ValueError("copy_host_to_device_tensor: host shape %s, device shape %s"
                         % (tuple(host.value.shape), tuple(device_tensor.value.shape)))
    device_tensor.value.copy_(host.value)


def unsqueeze_to_4D(t):
    v = t.value
    while v.dim() < 4:
        v = v.unsqueeze(0)
    return Tensor(v, t.device, t.dtype)


def reshape(t, shape):
    return Tensor(t.value.reshape(shape), t.device, t.dtype)


def untilize(t, use_multicore=False, **kwargs):
    return t


def to_layout(t, layout, memory_config=None, **kwargs):
    return t


def synchronize_device(device, *args, **kwargs):
    pass


def record_event(device, cq_id=0):
    return object()


def event_synchronize(event):
    pass


def begin_trace_capture(device, cq_id=0):
    if device._capture is not None:
        raise RuntimeError("begin_trace_capture: a capture is already open")
    device._capture = []
    return next(device._ids)


def end_trace_capture(device, trace_id, cq_id=0):
    device._traces[trace_id] = device._capture
    device._capture = None


def execute_trace(device, trace_id, cq_id=0, blocking=True):
    for op in device._traces[trace_id]:
        op()


def release_trace(device, trace_id):
    device._traces.pop(trace_id, None)


# --- ops: recorded inside a capture, run at once outside -------------------

def plus_one(t, skip_negative_entries=False, sub_core_grids=None):
    """Adds one to every entry in place; with skip_negative_entries an
    inactive slot's -1 stays -1."""
    def run():
        v = t.value
        if skip_negative_entries:
            v.add_((v >= 0).to(v.dtype))
        else:
            v.add_(1)
    _issue(t.device, run)


def copy(input_a, input_b):
    """Copies input_a into input_b in place (same number of entries)."""
    def run():
        input_b.value.copy_(input_a.value.reshape(input_b.value.shape))
    _issue(input_b.device, run)


def _binary(a, b, fn):
    ref = a if isinstance(a, Tensor) else b
    out = Tensor(torch.zeros(ref.value.shape, dtype=ref.value.dtype), ref.device, ref.dtype)

    def run():
        x = a.value if isinstance(a, Tensor) else a
        y = b.value if isinstance(b, Tensor) else b
        out.value.copy_(fn(x, y))
    _issue(ref.device, run)
    return out


def add(a, b, **kwargs):
    return _binary(a, b, lambda x, y: x + y)


def multiply(a, b, **kwargs):
    return _binary(a, b, lambda x, y: x * y)


def remainder(a, b, **kwargs):
    return _binary(a, b, lambda x, y: torch.remainder(x, y))

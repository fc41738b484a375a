"""Stand-in for ttnn (tests only): a device tensor is a list of ints with,
beside it, what the test needs to know and a device cannot say: which
request each entry was written for and at which step (`writer`, `step`)."""


class Tensor:
    def __init__(self, values, writer=None, step=None):
        self.data = [int(x) for x in values]
        self.writer = list(writer) if writer is not None else [None] * len(self.data)
        self.step = step

    def write(self, host):
        vals, writer, step = host
        self.data = [int(x) for x in vals]
        self.writer = list(writer)
        self.step = step


def get_device_tensors(t):
    return [t]


def to_torch(t):
    from models.tt_transformers.tt.common import Vec
    return Vec(t.data)


def execute_trace(mesh_device, trace_id, cq_id=0, blocking=False):
    mesh_device.traces[trace_id]()


class MeshDevice:
    def __init__(self):
        self.traces = {}

    def get_num_devices(self):
        return 1

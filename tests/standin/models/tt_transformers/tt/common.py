"""Stand-in for models/tt_transformers/tt/common.py: the decode Mode and a
host-to-device copy, plus Vec, the stand-in's tensor (a list with tolist()
and shape, which is all the kit asks of a torch tensor)."""

import enum


class Mode(enum.Enum):
    PREFILL = "prefill"
    DECODE = "decode"


class Vec:
    """A 1-d int tensor: what torch gives the real code, reduced to a list."""

    def __init__(self, values):
        self.v = [int(x) for x in values]

    @property
    def shape(self):
        return (len(self.v),)

    def tolist(self):
        return list(self.v)

    def reshape(self, *shape):
        return Vec(self.v)

    def __len__(self):
        return len(self.v)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return Vec(self.v[i])
        return self.v[i]

    def __repr__(self):
        return "Vec(%r)" % self.v


def copy_host_to_device(host_tensors, device_tensors):
    """Writes host inputs into the persistent device tensors (the restage)."""
    for h, d in zip(host_tensors, device_tensors):
        d.write(h)
    return device_tensors

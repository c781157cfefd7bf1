# Stubs of the native module irqlab._native (crates/irqlab-py). Times are
# integer nanoseconds; the JSON texts are those docs/model.md and
# docs/metrics.md describe. tests/python/test_stubs.py checks that every
# public native name has a stub here with the same parameters.
from . import analysis as analysis
from . import core as core
from . import model as model
from . import rt as rt
from . import sim as sim

"""On PYTHONPATH only under tools/compat/run_torchcodec_tests.py: the Python processes that TorchCodec's
tests start themselves (``subprocess.run([sys.executable, "-c", script])``, e.g. in its
test_logging.py) get the same stand-ins (``_torchcodec_test_shim``) as the test process, so that
their ``from test.utils import ...`` works as it does there."""
import os

if os.environ.get("TORCHCODEC_TEST_SHIM_TESTS"):
    import _torchcodec_test_shim  # noqa: F401

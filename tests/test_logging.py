"""torchcodec's log level, and FFmpeg's log lines routed to Python's logging (torchcodec/_logging.py).

The reference for which lines FFmpeg logs, and at which level, is the ffmpeg CLI decoding the same
damaged file (``reference.ffmpeg_log_lines``).
"""
from __future__ import annotations

import logging
import os
import re
import subprocess
import sys
import textwrap

import pytest

import reference
from torchcodec._logging import get_log_level, set_log_level
from torchcodec.decoders import VideoDecoder

# FFmpeg's level names -> the Python level of their lines (as documented in torchcodec/_logging.py).
PYTHON_LEVEL = {"panic": logging.CRITICAL, "fatal": logging.CRITICAL, "error": logging.ERROR,
                "warning": logging.WARNING, "info": logging.INFO, "verbose": 15, "debug": logging.DEBUG,
                "trace": 5}
PREFIX = re.compile(r"^\[(?P<component>[^\]@]+) @ 0x[0-9a-f]+\] (?P<text>.*)$", re.DOTALL)


@pytest.fixture
def restore_log_level():
    before = get_log_level()
    yield
    set_log_level(before)


def _damage(source: os.PathLike, destination: os.PathLike) -> None:
    """A copy of ``source`` with 600 bytes flipped a third of the way in (the same every time)."""
    data = bytearray(open(source, "rb").read())
    start = len(data) // 3
    for k in range(start, start + 3000, 5):
        data[k] ^= 0x55
    open(destination, "wb").write(data)


@pytest.fixture(scope="module")
def damaged_ts(media, tmp_path_factory):
    """H.264 in MPEG-TS with damaged packets: the mpegts demuxer warns ("Packet corrupt") and the
    h264 decoder logs errors ("error while decoding MB ...")."""
    path = tmp_path_factory.mktemp("damaged") / "damaged.ts"
    _damage(media["h264_bframes.ts"], path)
    return path


def _run_python(code: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, **env))


def _ffmpeg_records(records: list[logging.LogRecord]) -> set[tuple[int, str, str]]:
    """(level, component, text) of the records of FFmpeg's lines."""
    found = set()
    for record in records:
        match = PREFIX.match(record.getMessage())
        if record.name == "torchcodec.ffmpeg" and match:
            found.add((record.levelno, match["component"], match["text"]))
    return found


def _decode_everything(path: os.PathLike) -> None:
    decoder = VideoDecoder(path)
    decoder.get_frames_in_range(0, len(decoder))


# ---- FFmpeg's lines -----------------------------------------------------------------------------

def test_ffmpeg_warnings_and_errors_reach_logging_at_their_level(damaged_ts, caplog, restore_log_level):
    expected = {(PYTHON_LEVEL[level], component, text)
                for component, level, text in reference.ffmpeg_log_lines(damaged_ts)
                if component in ("mpegts", "h264") and level in ("warning", "error")}
    assert {level for level, _, _ in expected} == {logging.WARNING, logging.ERROR}   # the damage does both
    set_log_level("WARNING")
    with caplog.at_level(1):
        _decode_everything(damaged_ts)
    ours = _ffmpeg_records(caplog.records)
    assert expected <= ours
    assert all(level >= logging.WARNING for level, _, _ in ours)


def test_the_level_set_gates_ffmpeg_lines(damaged_ts, caplog, restore_log_level):
    with caplog.at_level(1):
        set_log_level("error")
        _decode_everything(damaged_ts)
        errors_only = _ffmpeg_records(caplog.records)
        caplog.clear()
        set_log_level("OFF")
        _decode_everything(damaged_ts)
        assert _ffmpeg_records(caplog.records) == set()
        caplog.clear()
        set_log_level("INFO")
        _decode_everything(damaged_ts)
        info = _ffmpeg_records(caplog.records)
    assert errors_only and {level for level, _, _ in errors_only} == {logging.ERROR}
    assert {logging.INFO, logging.WARNING, logging.ERROR} <= {level for level, _, _ in info}
    assert errors_only < info


def test_records_carry_ffmpegs_level_name(damaged_ts, caplog, restore_log_level):
    set_log_level("VERBOSE")
    with caplog.at_level(1):
        _decode_everything(damaged_ts)
    records = [r for r in caplog.records if r.name == "torchcodec.ffmpeg"]
    verbose = [r for r in records if r.ffmpeg_level == "verbose"]
    assert verbose and all(r.levelno == 15 and r.levelname == "VERBOSE" for r in verbose)
    assert all(r.levelno == PYTHON_LEVEL[r.ffmpeg_level] for r in records)


def test_ffmpeg_lines_never_reach_the_c_stderr(damaged_ts):
    # Logging configured to stdout: FFmpeg's lines come there, once, and stderr stays empty.
    configured = _run_python(f"""
        import logging, sys
        logging.basicConfig(stream=sys.stdout, level=logging.DEBUG, format="%(levelname)s %(name)s %(message)s")
        import torchcodec
        from torchcodec.decoders import VideoDecoder
        torchcodec.set_bridge("numpy")
        torchcodec.set_log_level("warning")
        decoder = VideoDecoder({str(damaged_ts)!r})
        decoder.get_frames_in_range(0, len(decoder))
    """)
    assert configured.returncode == 0, configured.stderr
    assert configured.stderr == ""
    assert re.search(r"^WARNING torchcodec.ffmpeg \[mpegts @ 0x[0-9a-f]+\] Packet corrupt", configured.stdout, re.M)
    assert re.search(r"^ERROR torchcodec.ffmpeg \[h264 @ 0x[0-9a-f]+\] error while decoding MB", configured.stdout,
                     re.M)
    # The default level is OFF: nothing anywhere, although FFmpeg has errors to report.
    default = _run_python(f"""
        import torchcodec
        from torchcodec.decoders import VideoDecoder
        torchcodec.set_bridge("numpy")
        decoder = VideoDecoder({str(damaged_ts)!r})
        decoder.get_frames_in_range(0, len(decoder))
        print(torchcodec.get_log_level())
    """)
    assert default.returncode == 0, default.stderr
    assert (default.stdout, default.stderr) == ("OFF\n", "")


@pytest.mark.parametrize("level", ["ALL", "OFF"])
def test_without_logging_configured_records_are_printed_on_stderr(h264, level):
    # As TorchCodec: "ALL" prints "VideoDecoder created" on stderr, "OFF" prints nothing.
    result = _run_python(f"""
        from torchcodec._logging import set_log_level
        set_log_level({level!r})
        from torchcodec.decoders import VideoDecoder
        VideoDecoder({str(h264)!r})
    """)
    assert result.returncode == 0, result.stderr
    if level == "ALL":
        assert "[torchcodec] DEBUG: VideoDecoder created:\nVideoStreamMetadata:\n" in result.stderr
    else:
        assert result.stderr == ""


def test_lines_beyond_the_queue_are_counted_in_one_record(tmp_path, caplog, restore_log_level):
    # 450 frames of H.264 in MPEG-TS: FFmpeg logs several TRACE lines per packet, far more than
    # the queue holds within one call.
    path = tmp_path / "long.ts"
    subprocess.run([reference.FFMPEG, "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x64:rate=30:duration=15",
                    "-c:v", "libx264", "-preset", "ultrafast", "-bf", "2", "-g", "30", str(path)], check=True)
    decoder = VideoDecoder(path)
    set_log_level("TRACE")
    with caplog.at_level(1):
        decoder.get_frames_in_range(0, len(decoder))
    records = [r for r in caplog.records if r.name == "torchcodec.ffmpeg"]
    dropped = [r for r in records if "more FFmpeg log lines were dropped" in r.getMessage()]
    assert len(dropped) == 1 and records[-1] is dropped[0]
    assert len(records) == 1024 + 1
    assert int(dropped[0].getMessage().split()[0]) > 0


# ---- threads and processes -----------------------------------------------------------------------

def test_threads_decoding_while_ffmpeg_logs_do_not_deadlock(damaged_ts):
    # FFmpeg's frame threads log while their decoder is used and while a __dealloc__ (run by the
    # garbage collector, GIL held) joins them; FFmpeg also logs from inside the reads of a file
    # object (which hold the GIL); a handler holds the GIL for a while on each record. A deadlock
    # would hang the child: the timeout of _run_python turns it into a failure.
    result = _run_python(f"""
        import gc, logging, threading
        import torchcodec
        from torchcodec.decoders import VideoDecoder
        torchcodec.set_bridge("numpy")

        count = []
        class Busy(logging.Handler):
            def emit(self, record):
                count.append(sum(range(2000)))
        logging.getLogger().addHandler(Busy())
        torchcodec.set_log_level("DEBUG")
        errors = []

        def work(k):
            try:
                for _ in range(3):
                    source = {str(damaged_ts)!r} if k % 2 else open({str(damaged_ts)!r}, "rb")
                    decoder = VideoDecoder(source, num_ffmpeg_threads=4)
                    decoder.get_frames_in_range(0, len(decoder))
                    decoder.get_frames_at([50, 3, 41])
                    del decoder
                    gc.collect()
            except Exception as e:
                errors.append(e)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        print(len(count))
    """)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 100


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_while_threads_log_logs_too(damaged_ts):
    # A thread logs all the time while the parent forks: each child's queue starts empty with a
    # lock of its own, whatever the parent's threads were doing at the fork.
    result = _run_python(f"""
        import logging, os, sys, threading
        import torchcodec
        from torchcodec.decoders import VideoDecoder
        torchcodec.set_bridge("numpy")

        torchcodec.set_log_level("DEBUG")
        stop = threading.Event()

        def busy():
            while not stop.is_set():
                VideoDecoder({str(damaged_ts)!r}, num_ffmpeg_threads=2).get_frames_at([50, 10])

        busy_once = VideoDecoder({str(damaged_ts)!r}).get_frames_at([0])   # imports the bridge's library

        thread = threading.Thread(target=busy)
        thread.start()
        for _ in range(5):
            pid = os.fork()
            if pid == 0:
                records = []
                class Keep(logging.Handler):
                    def emit(self, record):
                        records.append(record)
                logging.getLogger().addHandler(Keep())
                decoder = VideoDecoder({str(damaged_ts)!r})
                decoder.get_frames_in_range(0, len(decoder))
                os._exit(0 if any("error while decoding MB" in r.getMessage() for r in records) else 3)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0, status
        stop.set()
        thread.join()
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "ok\n"


# ---- the level ----------------------------------------------------------------------------------

@pytest.mark.parametrize("level, reported, python_level", [
    ("OFF", "OFF", logging.CRITICAL + 1), ("off", "OFF", logging.CRITICAL + 1), ("quiet", "OFF", logging.CRITICAL + 1),
    ("ALL", "ALL", logging.DEBUG), ("all", "ALL", logging.DEBUG),
    ("critical", "CRITICAL", logging.CRITICAL), ("Fatal", "CRITICAL", logging.CRITICAL),
    ("PANIC", "CRITICAL", logging.CRITICAL),
    ("error", "ERROR", logging.ERROR), ("Error", "ERROR", logging.ERROR),
    ("warning", "WARNING", logging.WARNING), ("WARNING", "WARNING", logging.WARNING),
    ("wArN", "WARNING", logging.WARNING), ("info", "INFO", logging.INFO), ("verbose", "VERBOSE", 15),
    ("debug", "DEBUG", logging.DEBUG), ("trace", "TRACE", 5),
    (logging.WARNING, "WARNING", logging.WARNING), (logging.DEBUG, "DEBUG", logging.DEBUG), (25, 25, 25),
])
def test_level_names_in_any_case_and_numbers(restore_log_level, level, reported, python_level):
    set_log_level(level)
    assert get_log_level() == reported
    assert logging.getLogger("torchcodec").getEffectiveLevel() == python_level
    set_log_level(get_log_level())            # what get_log_level() says is a level
    assert get_log_level() == reported


@pytest.mark.parametrize("level", ["INVALID", "", "loud", -1, 2.5, None, True])
def test_invalid_levels_raise_value_error(restore_log_level, level):
    before = get_log_level()
    with pytest.raises(ValueError, match="Invalid log level"):
        set_log_level(level)
    assert get_log_level() == before


def test_top_level_functions_are_the_same():
    import torchcodec
    assert torchcodec.set_log_level is set_log_level and torchcodec.get_log_level is get_log_level


@pytest.mark.parametrize("value, reported", [("warning", "WARNING"), ("QUIET", "OFF"), ("Debug", "DEBUG"),
                                             ("20", "INFO"), ("", "OFF")])
def test_environment_variable_sets_the_level_at_import(value, reported):
    result = _run_python("import torchcodec; print(torchcodec.get_log_level())", TORCHCODEC_FFMPEG_LOG_LEVEL=value)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{reported}\n"
    assert result.stderr == ""


def test_invalid_environment_variable_warns_and_import_succeeds():
    result = _run_python("import torchcodec; print(torchcodec.get_log_level())", TORCHCODEC_FFMPEG_LOG_LEVEL="loud")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "OFF\n"
    assert "UserWarning: TORCHCODEC_FFMPEG_LOG_LEVEL is ignored: Invalid log level: 'loud'" in result.stderr


def test_import_does_not_import_torch_or_numpy():
    result = _run_python("import sys, torchcodec, torchcodec._logging; "
                         "print('torch' in sys.modules, 'numpy' in sys.modules)",
                         TORCHCODEC_FFMPEG_LOG_LEVEL="debug")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "False False\n"

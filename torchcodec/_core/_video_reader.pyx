"""The video reader: frames of one stream, by index or time, decoded into RGB straight into
caller-provided memory. It is what VideoDecoder runs on, built from the building blocks: the
Demuxer, the stream's VideoPacketDecoder (its ``next_frame`` loop) and a ColorConverter, used at C
level (no Python per frame).

``VideoReader.decode_at(targets, match, address, strides...)`` is the one batch routine that every
public method uses. It sorts the targets, decodes each distinct one once, in presentation order,
seeking only when the next target's key frame lies beyond the frame that the decoder would produce
next, and writes each frame into its slot(s) of the caller's memory. All of it runs without the
GIL. ``decode_into`` is the same for one frame, for other Cython extensions.

Approximate mode has no index: ``decode_requests`` answers its requests the way TorchCodec 0.17
does, by a cursor and the demuxer's own seeks (see there).
"""
from libc.math cimport floor
from libc.stdint cimport INT64_MIN, int64_t, uint8_t
from libc.stdlib cimport free, malloc, qsort

from torchcodec._core._color_converter cimport ColorConverter, cpu_color_converter
from torchcodec._core._demuxer cimport MAX_STEP_BACKS, Demuxer
from torchcodec._core._error import EndOfStreamError
from torchcodec._core._frame_index cimport FrameIndex, closest_ticks, ticks_to_seconds
from torchcodec._core._packet_decoder cimport VideoPacketDecoder, open_video_decoder
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avutil cimport AVFrame



# Outputs of at least this many bytes (a batch larger than a last-level cache) are written with
# non-temporal stores where the conversion can (DeviceConverter.stream_output): each frame's bytes
# then go to memory without first reading the lines they overwrite.
cdef Py_ssize_t STREAM_OUTPUT_BYTES = 32 << 20


cdef int check_output(Py_ssize_t n, size_t address, Py_ssize_t frame_stride, Py_ssize_t row_stride,
                      int height, int width, bint as_float, pts_out, duration_out) except -1:
    """Check that the output memory and timestamp buffers described hold ``n`` frames."""
    cdef double[::1] pts_view = pts_out
    cdef double[::1] duration_view = duration_out
    cdef size_t pixel_bytes = 3 * (4 if as_float else 1)
    if pts_view.shape[0] != n or duration_view.shape[0] != n:
        raise ValueError("pts_out and duration_out must have one entry per frame")
    if n and (address == 0 or height <= 0 or width <= 0 or row_stride < <Py_ssize_t>(width * pixel_bytes)
              or (n > 1 and frame_stride < row_stride * height)):
        raise ValueError("the output memory's size or strides do not fit the frames")
    return 0


cdef bint would_seek(const void *context, int64_t returned, int in_flight) noexcept nogil:
    """Whether TorchCodec 0.17 seeks to ``context``'s cursor (a CursorSeek) after returning the frame
    at ``returned`` (INT64_MIN: none), the decoder holding back ``in_flight`` frames, rather than
    decode on: not when the returned frame and the cursor share the demuxer's key frame, nor when
    the cursor's frame (counted on the frame-rate grid) is within the frames held back anyway. A
    PacketDecoder.drain_once_known judge: the decoder may drain once the frame to return is known."""
    cdef const CursorSeek *next = <const CursorSeek *>context
    cdef int last_key, target_key
    cdef int64_t last_frame, target_frame
    if returned == INT64_MIN or next.cursor <= returned:
        return True
    last_key = lavf.av_index_search_timestamp(next.stream, returned, lavf.AVSEEK_FLAG_BACKWARD)
    target_key = lavf.av_index_search_timestamp(next.stream, next.cursor, lavf.AVSEEK_FLAG_BACKWARD)
    if last_key < 0 or target_key < 0:
        return True
    if last_key == target_key:
        return False
    last_frame = <int64_t>floor((ticks_to_seconds(returned, next.time_base_num, next.time_base_den)
                                 - next.grid_begin) * next.grid_fps)
    target_frame = <int64_t>floor((ticks_to_seconds(next.cursor, next.time_base_num, next.time_base_den)
                                   - next.grid_begin) * next.grid_fps)
    return target_frame - last_frame > in_flight


cdef int compare_targets(const void *a, const void *b) noexcept nogil:
    cdef const Target *ta = <const Target *>a
    cdef const Target *tb = <const Target *>b
    if ta.timestamp != tb.timestamp:
        return (ta.timestamp > tb.timestamp) - (ta.timestamp < tb.timestamp)
    return (ta.position > tb.position) - (ta.position < tb.position)


cdef class VideoReader:
    """Decoding state for stream ``stream_index`` of ``demuxer`` (which must follow it).

    ``index``: the FrameIndex (exact mode) or None (approximate mode: key frames come from the
    demuxer's own index). ``at_start``: whether the demuxer is still at the start of the file
    (False after a scan). ``rotation``: clockwise degrees (0, 90, 180, 270) to turn frames by.
    ``decoder`` and ``converter``: the stream's VideoPacketDecoder and the ColorConverter (by
    default a one-thread libavcodec decoder and a CPU converter; CUDA decoders pass NVDEC's decoder
    or a hwaccel one, and a CUDA converter).
    """

    def __cinit__(self, Demuxer demuxer not None, int stream_index, FrameIndex index, int rotation, bint at_start,
                  VideoPacketDecoder decoder=None, ColorConverter converter=None):
        self.packet = NULL
        self.held = NULL
        self.incoming = NULL
        if rotation not in (0, 90, 180, 270):
            raise ValueError(f"rotation must be 0, 90, 180 or 270, got {rotation}")
        if not demuxer.follows(stream_index):
            raise ValueError(f"the demuxer does not follow stream {stream_index}: build it with "
                             f"Demuxer(source, streams={stream_index})")
        self.demuxer = demuxer
        self.stream_index = stream_index
        self.index = index
        self.rotation = rotation
        self.time_base_num = demuxer.stream(stream_index).time_base.num
        self.time_base_den = demuxer.stream(stream_index).time_base.den
        self.decoder = decoder if decoder is not None else open_video_decoder(demuxer, stream_index, 1)
        if self.decoder.stream_index != stream_index:
            raise ValueError(f"the decoder decodes stream {self.decoder.stream_index}, not {stream_index}")
        self.converter = converter if converter is not None else cpu_color_converter("uint8")
        self.packet = lavc.av_packet_alloc()
        self.held = lavu.av_frame_alloc()
        self.incoming = lavu.av_frame_alloc()
        if self.packet == NULL or self.held == NULL or self.incoming == NULL:
            raise MemoryError("cannot allocate packets and frames")
        self.has_held = False
        self.has_prev = False
        self.held_serial = 0
        self.covered_from = INT64_MIN
        self.run_from_start = at_start
        self.frames_since_seek = 0
        self.last_seek_key = INT64_MIN
        self.needs_seek = not at_start
        self.first_key_timestamp = self.key_frame_timestamp(INT64_MIN + 1)
        self.seek_by_bytes = False
        self.start_by_bytes = False
        self.positional = index is not None and index.pts_from_dts
        self.position = -1
        self.step_backs = 0
        self.frames_decoded = 0
        self.seeks = 0
        start = demuxer.stream(stream_index).start_time
        self.start_timestamp = start if start != lavu.AV_NOPTS_VALUE else INT64_MIN
        rate = demuxer.stream(stream_index).r_frame_rate
        self.decoder_timestamps = index is None
        # Approximate mode drains its decoder as soon as a request's frame is known (see serve).
        self.decoder.track_in_flight = index is None and self.decoder.can_drain_early
        self.grid_begin = (ticks_to_seconds(start, self.time_base_num, self.time_base_den)
                           if start != lavu.AV_NOPTS_VALUE else 0.0)
        self.grid_fps = lavu.av_q2d(rate) if rate.num > 0 and rate.den > 0 else 0.0
        self.cursor = INT64_MIN
        self.last_index = INT64_MIN
        self.returned_pts = INT64_MIN
        self.returned_duration = 0
        self.plan_pts = NULL
        self.plan_run_end = NULL
        self.plan_sent = NULL
        self.plan_size = 0
        self.plan_at = -1
        self.early_drain = False
        self.drained_run_end = -1

    def __dealloc__(self):
        self.drop_plan()
        lavc.av_packet_free(&self.packet)
        lavu.av_frame_free(&self.held)
        lavu.av_frame_free(&self.incoming)

    def _index_reordered(self):
        """The index changed after the reader was built (a lazy scan met packets out of order and
        sorted it again, IndexScan): take what depends on it again. Returns whether frames were
        decoded before (from the index as it was); the reader then seeks before the next frame."""
        self.positional = self.index is not None and self.index.pts_from_dts
        self.first_key_timestamp = self.key_frame_timestamp(INT64_MIN + 1)
        if self.frames_decoded == 0 and self.seeks == 0:
            return False                  # nothing read yet: as if the index had been whole from the start
        self.position = -1
        self.has_held = False
        self.has_prev = False
        self.needs_seek = True
        return True

    def set_transforms(self, stages, single_resize=False):
        """Apply a transform plan to every frame from now on (an empty sequence: none).

        ``stages``: up to 8 tuples ``(x, y, crop_w, crop_h, out_w, out_h, resize)``. Each crops its
        input to the rectangle at (x, y), then, when ``resize`` is true, resizes it (bilinear) to
        out_w x out_h (otherwise out_w x out_h must be the crop's size). Stage 0's input is the
        frame after rotation, converted to RGB; each later stage's is the output of the one before.
        Output frames are then the last stage's out_w x out_h. ``single_resize``: the transforms
        were a single Resize (see ``Scaler.set_stages``).
        """
        self.converter.impl.set_stages(stages, single_resize)

    # ---- decoding ------------------------------------------------------------------------------

    cdef int seek_to(self, int64_t target) except -1 nogil:
        """Seek to the key frame from which ``target`` can be decoded (INT64_MIN: the start)."""
        cdef int64_t key
        if target == INT64_MIN or self.positional:
            # Positional mode decodes from the start: after a seek, such decoders (MPEG-4 packed
            # B-frames) may drop frames, which would shift the count.
            return self.seek_to_key(INT64_MIN, 0)
        key = self.key_frame_timestamp(target)
        if self.index is None and key != INT64_MIN:
            # The demuxer's index holds dts, which its own seek corrects for: give it the target.
            self.seek_to_key(target, -1)
            self.last_seek_key = key
            return 0
        return self.seek_to_key(key, self.key_frame_position(target))

    cdef int seek_to_key(self, int64_t key, int64_t position) except -1 nogil:
        """Seek to the key frame at timestamp ``key`` (byte ``position`` if known; INT64_MIN: the start)."""
        if key == INT64_MIN and self.start_by_bytes:
            self.demuxer.seek_bytes(0)
        elif self.seek_by_bytes and position >= 0:
            self.demuxer.seek_bytes(position)
        else:
            if key == INT64_MIN:
                self.demuxer.seek_to_start(self.stream_index)
            else:
                self.demuxer.seek_timestamp(self.stream_index, key)
        self.decoder.flush()
        self.seeks += 1
        if self.positional:
            self.position = -1                # positional mode always restarts from the beginning
        self.last_seek_key = key
        self.run_from_start = key == INT64_MIN
        self.frames_since_seek = 0
        self.has_held = False
        self.has_prev = False
        self.needs_seek = False
        return 0

    cdef int step_back(self, int64_t target) except -1 nogil:
        """The last seek landed after ``target``: seek again, by bytes or from an earlier key frame."""
        cdef int64_t earlier
        if (self.index is not None and not self.seek_by_bytes and self.key_frame_position(target) >= 0
                and self.demuxer.can_seek_bytes()):
            self.seek_by_bytes = True     # timestamp search is approximate here (MPEG-TS/PS, raw streams)
            return self.seek_to(target)
        self.step_backs += 1
        earlier = INT64_MIN
        if self.last_seek_key != INT64_MIN and self.step_backs <= MAX_STEP_BACKS:
            earlier = self.key_frame_timestamp(self.last_seek_key - 1)
            if earlier >= self.last_seek_key - 1:   # no earlier key frame is known: start over
                earlier = INT64_MIN
        return self.seek_to_key(earlier, self.key_frame_position(earlier) if earlier != INT64_MIN else 0)

    cdef int decode_next(self) except -1 nogil:
        """Decode the next frame into ``held``: 1 when one came, 0 at the end of the stream."""
        cdef AVFrame *swap
        cdef int64_t previous_end
        if not self.decoder.next_frame(self.demuxer, self.packet, self.incoming):
            return 0
        if self.has_held:
            self.prev_pts = self.held_pts
            self.has_prev = True
        swap = self.held
        self.held = self.incoming
        self.incoming = swap
        lavu.av_frame_unref(self.incoming)
        self.has_held = True
        previous_end = self.held_pts + self.held_duration
        self.held_duration = ffcompat.tc_frame_duration(self.held)
        if self.decoder_timestamps:        # approximate mode reports what the decoder says, as TorchCodec
            self.held_pts = self.held.pts if self.held.pts != lavu.AV_NOPTS_VALUE else self.held.pkt_dts
        else:
            self.held_pts = ffcompat.tc_frame_pts(self.held)
        if self.held_pts == lavu.AV_NOPTS_VALUE and not self.decoder_timestamps:
            # No timestamp at all (e.g. MPEG-4 B-frames in AVI): continue from the previous
            # frame, or take the key frame that decoding started from.
            if self.has_prev:
                self.held_pts = previous_end
            elif self.run_from_start:
                self.held_pts = self.start_timestamp if self.start_timestamp != INT64_MIN else 0
            else:
                self.held_pts = self.last_seek_key
        self.decoded_pts = self.held_pts
        if self.positional:
            # The decoder's timestamps are not the index's (packets without pts): the n-th
            # frame after a seek to key frame k is entry k + n of the index.
            self.position += 1
            if self.position < self.index.size:
                self.held_pts = self.index.entries[self.position].pts
                self.held_duration = self.index.entries[self.position].duration
        self.held_serial += 1
        self.frames_since_seek += 1
        self.frames_decoded += 1
        return 1

    cdef bint landed_late(self) noexcept nogil:
        """Whether the first frame after a seek to the start is later than the index's first frame.
        In positional mode the frame's own timestamp, which may be a frame late (a decoder's delay
        with packets without pts), must be later than the second."""
        if self.positional:
            return self.index.size > 1 and self.decoded_pts > self.index.entries[1].pts
        return self.held_pts > self.index.entries[0].pts

    cdef int64_t key_frame_timestamp(self, int64_t target) noexcept nogil:
        """Timestamp to seek to in order to decode ``target``: its key frame (INT64_MIN: the start)."""
        cdef Py_ssize_t i, k
        cdef const lavf.AVIndexEntry *entry
        cdef lavf.AVStream *stream
        if self.index is not None:
            i = self.index.last_at_or_before(target)
            if i < 0:
                return INT64_MIN
            k = self.index.entries[i].key_before
            return self.index.entries[k].pts if k >= 0 else INT64_MIN
        # Approximate mode: the demuxer's own index of key frames, when it has one.
        stream = self.demuxer.ptr.streams[self.stream_index]
        if lavf.avformat_index_get_entries_count(stream) == 0:
            return target                     # no index: let the demuxer's seek find the key frame
        entry = lavf.avformat_index_get_entry_from_timestamp(stream, target, lavf.AVSEEK_FLAG_BACKWARD)
        return entry.timestamp if entry != NULL else INT64_MIN

    cdef int64_t key_frame_position(self, int64_t target) noexcept nogil:
        """Byte position of ``target``'s key frame packet (exact mode), or -1."""
        cdef Py_ssize_t i, k
        if self.index is None:
            return -1
        i = self.index.last_at_or_before(target)
        k = self.index.entries[i].key_before if i >= 0 else -1
        return self.index.entries[k].pos if k >= 0 else -1

    cdef int64_t answer_lower_bound(self, int64_t target, Match match) noexcept nogil:
        """A timestamp that the frame ``match`` asks for at ``target`` cannot be before, where the
        index knows it (exact mode); INT64_MIN where it does not."""
        cdef Py_ssize_t i
        if self.index is None or self.positional:
            return INT64_MIN
        if match == AT_OR_AFTER:
            return target
        i = self.index.last_at_or_before(target)
        return self.index.entries[i].pts if i >= 0 else INT64_MIN

    cdef bint held_answers(self, int64_t target, Match match) noexcept nogil:
        """Whether the held frame is the one ``match`` asks for at ``target``."""
        if not self.has_held:
            return False
        # Below the held frame: the previous frame, or where decoding began.
        cdef bint nothing_between = (target > self.prev_pts) if self.has_prev else (target >= self.covered_from)
        cdef Py_ssize_t i
        if nothing_between and self.decoder.may_have_left_out and self.index is not None:
            # Frames may have been left out before the held one: the index says what lies between.
            i = self.index.find_pts(self.held_pts)
            if i > 0 and target <= self.index.entries[i - 1].pts:
                nothing_between = False
        if match == AT_OR_AFTER:
            return target <= self.held_pts and nothing_between
        cdef int64_t end = self.held_pts + (self.held_duration if self.held_duration > 0 else 1)
        return target < end and (self.held_pts <= target or nothing_between)

    cdef bint should_seek(self, int64_t target) noexcept nogil:
        """Whether reaching ``target`` needs a seek rather than decoding on from here."""
        cdef int64_t key = self.key_frame_timestamp(target)
        if self.needs_seek or self.decoder.output_done:     # the decoder was drained: start again
            return True
        if self.decoder.drained_early and not (0 <= self.plan_at < self.drained_run_end):
            return True                       # drained after another run's packets: this frame's may not have been sent
        if self.positional:
            return self.has_held and target <= self.held_pts
        if not self.has_held:                 # nothing decoded since the start or the last seek
            return not self.run_from_start or key > self.first_key_timestamp
        if target <= self.held_pts:           # behind us
            return True
        return key > self.pts_after(self.held_pts, self.held_duration)

    cdef int64_t pts_after(self, int64_t pts, int64_t duration) noexcept nogil:
        """The pts of the frame after the one at ``pts``: the index's next entry, else where the
        frame ends (``duration``; 1 tick when it has none)."""
        cdef Py_ssize_t i
        if self.index is not None:
            i = self.index.find_pts(pts)
            if i >= 0 and i + 1 < self.index.size:
                return self.index.entries[i + 1].pts
        return pts + (duration if duration > 0 else 1)

    cdef int find_frame(self, int64_t target, Match match) except -1 nogil:
        """Decode until ``held`` is the frame that ``match`` asks for at ``target``.

        A seek must land at or before the target: the first frame after it is checked. When it
        landed later (timestamp search is approximate in MPEG-TS/PS and raw streams; a demuxer's
        index may hold dts), the seek is redone by the key frame's byte position (kept for every
        later seek) or from an earlier key frame, and at worst from the start of the file.
        """
        if self.held_answers(target, match):
            return 0
        if self.should_seek(target):
            self.seek_to(target)
            self.arm_drain()
        cdef int64_t answer_from = self.answer_lower_bound(target, match)
        if self.frames_since_seek > 0:
            self.decoder.skip_unneeded_before(answer_from)
        while True:
            if not self.decode_next():
                if self.decoder.drained_early:
                    # The early drain came before this frame (packets with repeated timestamps?):
                    # decode the rest of the request the plain way, from the key frame.
                    self.early_drain = False
                    self.seek_to(target)
                    continue
                if self.frames_since_seek == 0 and not self.run_from_start:
                    self.step_back(target)    # the seek landed at the end (e.g. a truncated file)
                    continue
                if self.has_held and match == PLAYED_AT and self.held_pts <= target:
                    return 0          # the last frame plays until the end of the stream
                with gil:
                    raise EndOfStreamError(
                        f"Requested next frame while there are no more frames: no decodable frame at or after pts "
                        f"{target} (={ticks_to_seconds(target, self.time_base_num, self.time_base_den):.6f} s): "
                        f"the stream ended first (truncated or corrupt file?)")
            if self.frames_since_seek == 1:
                if self.run_from_start:
                    if (self.index is not None and self.index.size and self.landed_late()
                            and not self.start_by_bytes and self.demuxer.can_seek_bytes()):
                        self.start_by_bytes = True    # the timestamp seek to the start landed late
                        self.seek_to(INT64_MIN)
                        continue
                    self.covered_from = INT64_MIN
                elif self.held_pts > target:
                    self.step_back(target)
                    continue
                else:
                    self.covered_from = self.held_pts
                    self.step_backs = 0
                # Landed where it should: frames before the answer are needed only as references.
                self.decoder.skip_unneeded_before(answer_from)
            if self.held_answers(target, match):
                return 0

    # ---- decode_at's plan: drain at the end of each run ----------------------------------------------

    cdef int make_plan(self, const Target *order, Py_ssize_t n) except -1 nogil:
        """Plan the distinct targets among ``n`` sorted ones (``order``): group them into runs, a run being
        the targets that should_seek lets the reader reach from one seek (each next target's key
        frame is at or before the frame after the previous target). Only for exact mode with a
        libavcodec CPU decoder, and only runs whose every target is an exact frame pts (the
        packets of those frames are what the decoder counts); else no plan."""
        cdef Py_ssize_t k, d, m = 0
        self.drop_plan()
        if self.index is None or self.positional or not self.decoder.can_drain_early or n == 0:
            return 0
        self.plan_pts = <int64_t *>malloc(n * sizeof(int64_t))
        self.plan_run_end = <Py_ssize_t *>malloc(n * sizeof(Py_ssize_t))
        self.plan_sent = <uint8_t *>malloc(n)
        if self.plan_pts == NULL or self.plan_run_end == NULL or self.plan_sent == NULL:
            self.drop_plan()
            with gil:
                raise MemoryError(f"cannot plan {n} targets")
        for k in range(n):
            if k == 0 or order[k].timestamp != order[k - 1].timestamp:
                self.plan_pts[m] = order[k].timestamp
                m += 1
        self.plan_size = m
        d = m - 1
        while d >= 0:
            self.plan_run_end[d] = d + 1
            if d + 1 < m and self.key_frame_timestamp(self.plan_pts[d + 1]) <= self.pts_after(self.plan_pts[d], 0):
                self.plan_run_end[d] = self.plan_run_end[d + 1]
            d -= 1
        self.plan_at = 0
        self.early_drain = True
        return 0

    cdef void drop_plan(self) noexcept nogil:
        if self.decoder is not None:
            self.decoder.drain_once_sent(NULL, NULL, 0)
        free(self.plan_pts)
        free(self.plan_run_end)
        free(self.plan_sent)
        self.plan_pts = NULL
        self.plan_run_end = NULL
        self.plan_sent = NULL
        self.plan_size = 0
        self.plan_at = -1

    cdef void arm_drain(self) noexcept nogil:
        """After a seek for plan target ``plan_at``: have the decoder drain once the packets of
        the rest of its run were sent (none of the packets after them is needed before the next seek)."""
        cdef Py_ssize_t d = self.plan_at, k, end
        if d < 0 or d >= self.plan_size or not self.early_drain:
            return
        end = self.plan_run_end[d]
        if end == self.plan_size:
            return        # the last run: the next request may go on from it (decoder[i], then decoder[i + 1])
        for k in range(d, end):
            if self.index.find_pts(self.plan_pts[k]) < 0:
                return                        # a time between frames: its frame is not known for sure
        self.decoder.drain_once_sent(self.plan_pts + d, self.plan_sent + d, end - d)
        self.drained_run_end = end

    # ---- approximate mode: TorchCodec's cursor ----------------------------------------------------

    cdef CursorSeek cursor_seek(self, int64_t cursor) noexcept nogil:
        """What would_seek decides a seek to ``cursor`` from."""
        cdef CursorSeek rule
        rule.stream = self.demuxer.ptr.streams[self.stream_index]
        rule.cursor = cursor
        rule.grid_begin = self.grid_begin
        rule.grid_fps = self.grid_fps
        rule.time_base_num = self.time_base_num
        rule.time_base_den = self.time_base_den
        return rule

    cdef int64_t index_cursor(self, int64_t index) noexcept nogil:
        """The cursor of an index request: the timestamp closest to begin + index / fps, converted to
        seconds and back, as TorchCodec computes it (grid_fps > 0)."""
        cdef int64_t cursor = closest_ticks(self.grid_begin + index / self.grid_fps, self.time_base_num,
                                            self.time_base_den)
        return closest_ticks(ticks_to_seconds(cursor, self.time_base_num, self.time_base_den), self.time_base_num,
                             self.time_base_den)

    cdef bint cursor_needs_seek(self) noexcept nogil:
        """Whether TorchCodec would seek to reach ``cursor`` rather than decode on (would_seek)."""
        cdef CursorSeek rule = self.cursor_seek(self.cursor)
        return would_seek(&rule, self.returned_pts, self.decoder.frames_in_flight())

    cdef int serve(self, int64_t index, double seconds, int64_t next_index) except -1 nogil:
        """Leave in ``held`` the frame TorchCodec 0.17 returns for frame ``index`` or, when ``index``
        is negative, for the time ``seconds`` (get_frame_played_at). See decode_requests.

        ``next_index``: the frame index of the request after this one (-1: none, or a time). When
        TorchCodec will seek for it anyway, the decoder is drained as soon as this request's frame
        is known, as exact mode's plan drains at the end of a run (PacketDecoder.drain_once_known).
        """
        cdef bint by_time = index < 0
        cdef bint next_in_line = not by_time and self.last_index != INT64_MIN and index == self.last_index + 1
        cdef bint jumped_index = not by_time and not next_in_line     # an index request not after the last
        cdef double start, end
        if by_time:
            if self.returned_pts != INT64_MIN:       # the frame returned last plays at ``seconds``
                start = ticks_to_seconds(self.returned_pts, self.time_base_num, self.time_base_den)
                end = ticks_to_seconds(self.returned_pts + self.returned_duration, self.time_base_num, self.time_base_den)
                if start <= seconds < end:
                    seconds = start
            self.cursor = closest_ticks(seconds, self.time_base_num, self.time_base_den)
            self.last_index = INT64_MIN
        elif not next_in_line:
            if self.grid_fps <= 0:
                with gil:
                    raise RuntimeError("Cannot use approximate mode since we couldn't find the average fps from "
                                       "the metadata (the stream's header has no frame rate): use seek_mode='exact'")
            self.cursor = self.index_cursor(index)
        # A drained decoder cannot go on: it was drained because this request seeks.
        if not next_in_line and (self.decoder.drained_early or self.cursor_needs_seek()):
            self.seek_to_key(self.cursor, -1)
        # An index request's answer is the first frame at or after the cursor: the frames displayed
        # before it are needed only as references, as in exact mode (find_frame). A frame after the
        # last one, or a time's frame (which may start before the time), can be any frame.
        self.decoder.skip_unneeded_before(self.cursor if jumped_index else INT64_MIN)
        if jumped_index and 0 <= next_index != index + 1 and self.decoder.can_drain_early:
            self.next_request = self.cursor_seek(self.index_cursor(next_index))
            self.decoder.drain_once_known(self.cursor, would_seek, &self.next_request)
        while True:
            if not self.decode_next():
                if self.decoder.drained_early:
                    # The frame judged to come did not (refused as corrupt): from the key frame again.
                    self.seek_to_key(self.cursor, -1)
                    self.decoder.skip_unneeded_before(self.cursor if jumped_index else INT64_MIN)
                    continue
                with gil:
                    raise EndOfStreamError("Requested next frame while there are no more frames left to decode.")
            if by_time:
                start = ticks_to_seconds(self.held_pts, self.time_base_num, self.time_base_den)
                end = ticks_to_seconds(self.held_pts + self.held_duration, self.time_base_num, self.time_base_den)
                if start > seconds or (start <= seconds < end):
                    break
            elif self.held_pts >= self.cursor:
                break
        self.decoder.drain_once_known(INT64_MIN, NULL, NULL)
        self.returned_pts = self.held_pts
        self.returned_duration = self.held_duration
        if not by_time:
            self.last_index = index
        return 0

    cdef int decode_into(self, int64_t target, Match match, uint8_t *dst, Py_ssize_t row_stride,
                         int width, int height, bint as_float) except -1 nogil:
        """Decode the frame ``match`` asks for at ``target`` and write it as RGB into ``dst``.

        The C-level entry point for other extensions: ``dst`` holds ``height`` rows of ``width``
        packed RGB pixels (uint8, or float32 when ``as_float``), ``row_stride`` bytes apart. Runs
        without the GIL; the caller serialises calls on one VideoStream.
        """
        self.find_frame(target, match)
        return self.converter.convert_into(self.held, self.rotation, dst, row_stride, width, height, as_float)

    # ---- the batch routine ------------------------------------------------------------------------

    def decode_at(self, targets, int match, size_t address, Py_ssize_t frame_stride, Py_ssize_t row_stride,
                  int height, int width, bint as_float, pts_out, duration_out, slots=None):
        """Decode the frames at ``targets`` (int64 timestamps in the stream's time base) into memory.

        The output is len(pts_out) frames of ``height`` x ``width`` packed RGB pixels (uint8, or
        float32 when ``as_float``) at ``address``, frames ``frame_stride`` and rows ``row_stride``
        bytes apart; the caller keeps that memory alive and checked its size. Target k's frame goes
        to output frame k, or to ``slots[k]`` (int64, one per target: several readers can then fill
        the slots of one output, GopParallel), and its pts and duration in seconds to that entry of
        ``pts_out`` and ``duration_out`` (float64 buffers). Targets may come in any order and repeat.
        """
        cdef const int64_t[::1] wanted = targets
        cdef const int64_t[::1] slot_of
        cdef double[::1] pts_view = pts_out
        cdef double[::1] duration_view = duration_out
        cdef Py_ssize_t n = wanted.shape[0]
        cdef OutputSlots out
        cdef Target *order = NULL
        cdef Py_ssize_t k, position
        cdef char *slot
        cdef char *previous_slot = NULL
        cdef unsigned long previous_serial = 0
        cdef Match how = <Match>match
        check_output(pts_view.shape[0], address, frame_stride, row_stride, height, width, as_float, pts_out,
                     duration_out)
        if slots is not None:
            slot_of = slots
            if slot_of.shape[0] != n:
                raise ValueError("slots must have one entry per target")
            for k in range(n):
                if not 0 <= slot_of[k] < pts_view.shape[0]:
                    raise ValueError(f"slot {slot_of[k]} of target {k} is not a frame of the output")
        elif n != pts_view.shape[0]:
            raise ValueError("pts_out and duration_out must have one entry per target")
        if n == 0:
            return
        out.data = <char *>address
        out.frame_stride = frame_stride
        out.row_stride = row_stride
        out.height = height
        out.width = width
        out.as_float = as_float
        order = <Target *>malloc(n * sizeof(Target))
        if order == NULL:
            raise MemoryError(f"cannot plan {n} targets")
        self.converter.impl.stream_output = pts_view.shape[0] * frame_stride >= STREAM_OUTPUT_BYTES
        try:
            for k in range(n):
                order[k].timestamp = wanted[k]
                order[k].position = slot_of[k] if slots is not None else k
            with nogil:
                qsort(order, n, sizeof(Target), compare_targets)
                self.make_plan(order, n)
                for k in range(n):
                    position = order[k].position
                    slot = out.data + position * out.frame_stride
                    if k == 0 or order[k].timestamp != order[k - 1].timestamp:
                        if k > 0:
                            self.plan_at += 1
                        elif self.plan_at == 0:
                            self.arm_drain()      # no seek may come first: the run starts here
                        self.find_frame(order[k].timestamp, how)
                    if previous_slot != NULL and previous_serial == self.held_serial:
                        self.converter.copy_output(<uint8_t *>slot, <const uint8_t *>previous_slot, out.row_stride,
                                                   out.width, out.height, out.as_float)
                    else:
                        self.converter.convert_into(self.held, self.rotation, <uint8_t *>slot, out.row_stride,
                                            out.width, out.height, out.as_float)
                    previous_slot = slot
                    previous_serial = self.held_serial
                    pts_view[position] = ticks_to_seconds(self.held_pts, self.time_base_num, self.time_base_den)
                    duration_view[position] = ticks_to_seconds(self.held_duration, self.time_base_num, self.time_base_den)
        finally:
            self.converter.impl.stream_output = False
            self.drop_plan()
            free(order)

    def runs(self, targets):
        """How decode_at would decode the sorted distinct ``targets`` (int64 timestamps, exact mode):
        in runs, each beginning with a seek to a key frame (the targets that should_seek lets one
        seek reach, as make_plan groups them). Returns a list of ``(count, frames)`` per run, in
        order: how many of the targets it holds, and how many frames of the index lie from its key
        frame to its last target (what it decodes at most). Empty without an index."""
        cdef const int64_t[::1] wanted = targets
        cdef Py_ssize_t n = wanted.shape[0], k, first = 0, key, last
        result = []
        if self.index is None or n == 0:
            return result
        for k in range(1, n + 1):
            if k < n and wanted[k] <= wanted[k - 1]:
                raise ValueError("the targets must be sorted and distinct")
            if k < n and self.key_frame_timestamp(wanted[k]) <= self.pts_after(wanted[k - 1], 0):
                continue                      # reached from the run's seek
            key = self.index.last_at_or_before(wanted[first])
            key = self.index.entries[key].key_before if key >= 0 else 0
            last = self.index.last_at_or_before(wanted[k - 1])
            result.append((k - first, max(last - max(key, 0) + 1, 1)))
            first = k
        return result

    def decode_requests(self, requests, times, positions, size_t address, Py_ssize_t frame_stride,
                        Py_ssize_t row_stride, int height, int width, bint as_float, pts_out, duration_out):
        """Approximate mode: answer ``requests``, in their order, as TorchCodec 0.17 does.

        ``requests`` (int64): a frame index (>= 0); REPEAT (-1): the same frame as the request
        before; BY_TIME (-2): the frame played at ``times[k]`` seconds (float64, read only for
        these). Request k's frame goes to output slot ``positions[k]`` (int64) of the memory
        described as for decode_at, its pts and duration (the decoded frame's) to ``pts_out`` and
        ``duration_out`` at that slot.

        TorchCodec keeps a cursor. Frame i, when it is not the frame after the last index request's,
        sets the cursor to the pts closest to start + i / r_frame_rate and takes the first decoded
        frame whose pts (else pkt_dts) is >= the cursor, after a demuxer seek to the cursor unless
        decoding on is as cheap (see cursor_needs_seek); frame i right after frame i - 1 is the
        next frame the decoder outputs. A time t takes the first frame that plays at t or starts
        after it. Both can give a later frame than the stream's own timestamps say (a demuxer seek
        that lands after its target) and run off the end of the stream: EndOfStreamError (an
        IndexError and a RuntimeError, as TorchCodec raises one or the other), "Requested next
        frame while there are no more frames left to decode."
        """
        cdef const int64_t[::1] wanted = requests
        cdef const double[::1] seconds = times
        cdef const int64_t[::1] slot_of = positions
        cdef double[::1] pts_view = pts_out
        cdef double[::1] duration_view = duration_out
        cdef Py_ssize_t n = wanted.shape[0]
        cdef Py_ssize_t k, slot, following
        cdef char *data = <char *>address
        if seconds.shape[0] != n or slot_of.shape[0] != n:
            raise ValueError("requests, times and positions must have the same length")
        for k in range(n):
            if not 0 <= slot_of[k] < n or wanted[k] < BY_TIME or (k == 0 and wanted[k] == REPEAT):
                raise ValueError(f"request {k} is invalid: {wanted[k]} to slot {slot_of[k]}")
        check_output(n, address, frame_stride, row_stride, height, width, as_float, pts_out, duration_out)
        self.converter.impl.stream_output = n * frame_stride >= STREAM_OUTPUT_BYTES
        try:
            with nogil:
                for k in range(n):
                    slot = slot_of[k]
                    if wanted[k] == REPEAT:
                        self.converter.copy_output(<uint8_t *>data + slot * frame_stride,
                                                   <const uint8_t *>data + slot_of[k - 1] * frame_stride,
                                                   row_stride, width, height, as_float)
                        pts_view[slot] = pts_view[slot_of[k - 1]]
                        duration_view[slot] = duration_view[slot_of[k - 1]]
                        continue
                    following = k + 1
                    while following < n and wanted[following] == REPEAT:
                        following += 1
                    self.serve(wanted[k], seconds[k], wanted[following] if following < n else -1)
                    self.converter.convert_into(self.held, self.rotation, <uint8_t *>data + slot * frame_stride,
                                                row_stride, width, height, as_float)
                    pts_view[slot] = ticks_to_seconds(self.held_pts, self.time_base_num, self.time_base_den)
                    duration_view[slot] = ticks_to_seconds(self.held_duration, self.time_base_num, self.time_base_den)
        finally:
            self.converter.impl.stream_output = False

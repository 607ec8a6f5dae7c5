# SPDX-License-Identifier: Apache-2.0
"""rdmavideo: raw video frames (and their sound) between machines over RDMA verbs or TCP.

A thin layer over librdmavideo's C API (rdmavideo/rdmavideo.h) with ctypes and numpy, zero copy
both ways: a Sender lends buffers from the pool it registered with the network
(:meth:`Sender.lend`, filled in place), or copies a frame into one (:meth:`Sender.send`, one
memcpy inside the library); a Receiver hands out each frame as a numpy view of the ring slot
its sender wrote it into, valid until the next frame or :meth:`Frame.release`.

    import numpy as np, rdmavideo
    with rdmavideo.Sender("recv-host:5000", width=1920, height=1080, pix_fmt="rgba",
                          fps=60) as s:
        s.send(frame)          # numpy (h, w, 4) uint8 for rgba; any bytes-like of its size
    with rdmavideo.Receiver("0.0.0.0:5000") as r:
        for f in r:            # until every stream it took has ended and none is connected
            f.array, f.pts_ns, f.width, f.height, f.pix_fmt, f.stream

Every failure raises :class:`Error`, carrying the library's message. The library is found as
librdmavideo.so.0 (rdmavideo.dll on Windows), or where RDMAVIDEO_LIBRARY names it.
"""

import ctypes
import os
import sys
from fractions import Fraction

import numpy as np

__all__ = ["Error", "Sender", "Receiver", "Frame", "Chunk", "Buffer", "version",
           "set_log_level", "PTS_AUTO"]

PTS_AUTO = -(2 ** 63)

# ---- the library and its C types ---------------------------------------------------------------

_OK, _DROPPED, _TIMEOUT, _ENDED = 0, 1, 2, 3
_MEMORY_CUDA = 1
_SAMPLE_FORMATS = {"s16": 1, "s32": 2, "f32": 3, "s16p": 4, "s32p": 5, "f32p": 6}
_SAMPLE_DTYPES = {1: np.int16, 2: np.int32, 3: np.float32, 4: np.int16, 5: np.int32,
                  6: np.float32}


class _VideoFormat(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("pix_fmt", ctypes.c_char_p),
                ("width", ctypes.c_uint32), ("height", ctypes.c_uint32),
                ("fps_num", ctypes.c_uint32), ("fps_den", ctypes.c_uint32),
                ("colour", ctypes.c_char_p), ("name", ctypes.c_char_p)]


class _Layout(ctypes.Structure):
    _fields_ = [("plane_count", ctypes.c_uint32), ("offset", ctypes.c_uint64 * 4),
                ("stride", ctypes.c_uint32 * 4), ("rows", ctypes.c_uint32 * 4),
                ("frame_bytes", ctypes.c_uint64)]


class _AudioFormat(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("sample_format", ctypes.c_int),
                ("sample_rate", ctypes.c_uint32), ("channels", ctypes.c_uint32),
                ("channel_layout", ctypes.c_uint64), ("name", ctypes.c_char_p)]


class _Stats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("frames", ctypes.c_uint64),
                ("bytes", ctypes.c_uint64), ("dropped", ctypes.c_uint64),
                ("checksum_failures", ctypes.c_uint64), ("seconds", ctypes.c_double),
                ("cpu_seconds", ctypes.c_double), ("latency_p50_us", ctypes.c_double),
                ("latency_p99_us", ctypes.c_double), ("audio_samples", ctypes.c_uint64),
                ("streams", ctypes.c_uint32)]


class _SenderConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("destinations", ctypes.c_char_p),
                ("key_file", ctypes.c_char_p), ("name", ctypes.c_char_p),
                ("transport", ctypes.c_char_p), ("memory", ctypes.c_char_p),
                ("live", ctypes.c_int), ("paced", ctypes.c_int), ("reconnect", ctypes.c_int),
                ("require_all", ctypes.c_int), ("checksum", ctypes.c_int),
                ("pool_buffers", ctypes.c_uint32), ("connect_timeout_ms", ctypes.c_uint32)]


class _ReceiverConfig(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("listen", ctypes.c_char_p),
                ("key_file", ctypes.c_char_p), ("transport", ctypes.c_char_p),
                ("memory", ctypes.c_char_p), ("max_streams", ctypes.c_uint32),
                ("ring_slots", ctypes.c_uint32), ("max_memory", ctypes.c_uint64),
                ("stream_limit", ctypes.c_uint64), ("verify", ctypes.c_int)]


def _load():
    named = os.environ.get("RDMAVIDEO_LIBRARY")
    name = named or ("rdmavideo.dll" if sys.platform == "win32" else "librdmavideo.so.0")
    try:
        return ctypes.CDLL(name)
    except OSError as e:
        raise ImportError(f"rdmavideo: cannot load {name} ({e}); install librdmavideo0, or set "
                          "RDMAVIDEO_LIBRARY to the library's path") from e


_lib = _load()
_P = ctypes.c_void_p
_S = ctypes.c_int  # rdmavideo_status


def _fn(name, restype, *argtypes):
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


_version = _fn("rdmavideo_version", ctypes.c_char_p)
_last_error = _fn("rdmavideo_last_error", ctypes.c_char_p)
_status_name = _fn("rdmavideo_status_name", ctypes.c_char_p, _S)
_set_log_level = _fn("rdmavideo_set_log_level", _S, ctypes.c_char_p)
_format_init = _fn("rdmavideo_video_format_init", None, ctypes.POINTER(_VideoFormat))
_format_layout = _fn("rdmavideo_video_format_layout", _S, ctypes.POINTER(_VideoFormat),
                     ctypes.POINTER(_Layout))
_audio_init = _fn("rdmavideo_audio_format_init", None, ctypes.POINTER(_AudioFormat))
_sender_config_init = _fn("rdmavideo_sender_config_init", None, ctypes.POINTER(_SenderConfig))
_sender_create = _fn("rdmavideo_sender_create", _S, ctypes.POINTER(_SenderConfig),
                     ctypes.POINTER(_P))
_sender_start = _fn("rdmavideo_sender_start", _S, _P, ctypes.POINTER(_VideoFormat))
_sender_layout = _fn("rdmavideo_sender_layout", _S, _P, ctypes.POINTER(_Layout))
_sender_lend = _fn("rdmavideo_sender_lend", _S, _P, ctypes.POINTER(_P))
_buffer_data = _fn("rdmavideo_buffer_data", _P, _P)
_buffer_size = _fn("rdmavideo_buffer_size", ctypes.c_uint64, _P)
_buffer_memory = _fn("rdmavideo_buffer_memory", ctypes.c_int, _P)
_sender_submit = _fn("rdmavideo_sender_submit", _S, _P, _P, ctypes.c_int64)
_sender_discard = _fn("rdmavideo_sender_discard", None, _P, _P)
_sender_send = _fn("rdmavideo_sender_send", _S, _P, _P, ctypes.c_uint64, ctypes.c_int64)
_sender_start_audio = _fn("rdmavideo_sender_start_audio", _S, _P, ctypes.POINTER(_AudioFormat),
                          ctypes.POINTER(ctypes.c_uint32))
_sender_send_audio = _fn("rdmavideo_sender_send_audio", _S, _P, ctypes.c_uint32, ctypes.c_int64,
                         ctypes.c_uint32, _P, ctypes.c_uint64)
_sender_end_audio = _fn("rdmavideo_sender_end_audio", _S, _P, ctypes.c_uint32)
_sender_end = _fn("rdmavideo_sender_end", _S, _P)
_sender_stats = _fn("rdmavideo_sender_stats", _S, _P, ctypes.POINTER(_Stats))
_sender_destroy = _fn("rdmavideo_sender_destroy", None, _P)
_receiver_config_init = _fn("rdmavideo_receiver_config_init", None,
                            ctypes.POINTER(_ReceiverConfig))
_receiver_create = _fn("rdmavideo_receiver_create", _S, ctypes.POINTER(_ReceiverConfig),
                       ctypes.POINTER(_P))
_receiver_port = _fn("rdmavideo_receiver_port", ctypes.c_uint16, _P)
_receiver_next_frame = _fn("rdmavideo_receiver_next_frame", _S, _P, ctypes.c_int32,
                           ctypes.POINTER(_P))
_frame_data = _fn("rdmavideo_frame_data", _P, _P)
_frame_size = _fn("rdmavideo_frame_size", ctypes.c_uint64, _P)
_frame_memory = _fn("rdmavideo_frame_memory", ctypes.c_int, _P)
_frame_format = _fn("rdmavideo_frame_format", None, _P, ctypes.POINTER(_VideoFormat))
_frame_layout = _fn("rdmavideo_frame_layout", None, _P, ctypes.POINTER(_Layout))
_frame_pts = _fn("rdmavideo_frame_pts_ns", ctypes.c_int64, _P)
_frame_sequence = _fn("rdmavideo_frame_sequence", ctypes.c_uint64, _P)
_frame_stream = _fn("rdmavideo_frame_stream", ctypes.c_uint64, _P)
_frame_release = _fn("rdmavideo_frame_release", None, _P)
_receiver_next_chunk = _fn("rdmavideo_receiver_next_chunk", _S, _P, ctypes.c_int32,
                           ctypes.POINTER(_P))
_chunk_stream = _fn("rdmavideo_chunk_stream", ctypes.c_uint64, _P)
_chunk_track = _fn("rdmavideo_chunk_track", ctypes.c_uint32, _P)
_chunk_format = _fn("rdmavideo_chunk_format", None, _P, ctypes.POINTER(_AudioFormat))
_chunk_pts = _fn("rdmavideo_chunk_pts_ns", ctypes.c_int64, _P)
_chunk_samples = _fn("rdmavideo_chunk_samples", ctypes.c_uint32, _P)
_chunk_data = _fn("rdmavideo_chunk_data", _P, _P)
_chunk_size = _fn("rdmavideo_chunk_size", ctypes.c_uint64, _P)
_chunk_release = _fn("rdmavideo_chunk_release", None, _P)
_receiver_stats = _fn("rdmavideo_receiver_stats", _S, _P, ctypes.POINTER(_Stats))
_receiver_stop = _fn("rdmavideo_receiver_stop", None, _P)
_receiver_destroy = _fn("rdmavideo_receiver_destroy", None, _P)


class Error(Exception):
    """A failure in rdmavideo: ``status`` is the C API's status name, the text its message."""

    def __init__(self, status, message):
        self.status = _status_name(status).decode()
        super().__init__(message or self.status)


def _check(status, allowed=(_OK,)):
    if status in allowed:
        return status
    raise Error(status, _last_error().decode(errors="replace"))


def _text(value):
    return None if value is None else str(value).encode()


def version():
    """The library's version, "0.5.0"."""
    return _version().decode()


def set_log_level(level):
    """What the library logs on stderr: trace, debug, info, warn (the default), error, off."""
    _check(_set_log_level(_text(level)))


def _stats(get, handle):
    s = _Stats()
    s.struct_size = ctypes.sizeof(_Stats)
    _check(get(handle, ctypes.byref(s)))
    return {name: getattr(s, name) for name, _ in _Stats._fields_ if name != "struct_size"}


# The packed formats' bytes a pixel: viewed as (rows, pixels, bytes); the others as their planes.
_PACKED = {"rgba": 4, "bgra": 4, "rgb24": 3, "uyvy422": 2, "yuyv422": 2}


def _bytes(address, size):
    """The `size` bytes at `address` as a uint8 numpy array, without a copy."""
    return np.frombuffer((ctypes.c_uint8 * size).from_address(address), dtype=np.uint8)


def _view(whole, layout, pix_fmt, width, height):
    """The frame `whole` holds (its bytes, from _bytes): (h, w, c) for the packed formats, the
    whole frame's bytes otherwise (see :meth:`Frame.planes`)."""
    components = _PACKED.get(pix_fmt)
    if components is None or layout.plane_count != 1:
        return whole
    return np.lib.stride_tricks.as_strided(
        whole, shape=(height, width, components), strides=(layout.stride[0], components, 1),
        writeable=whole.flags.writeable)


def _planes(whole, layout):
    return [whole[layout.offset[p]:layout.offset[p] + layout.stride[p] * layout.rows[p]]
            .reshape(layout.rows[p], layout.stride[p]) for p in range(layout.plane_count)]


class _Handle:
    """What the library's objects share here: a handle that close() gives back (also at the end
    of a ``with`` block), and calls that refuse once it is gone."""

    _what = "object"
    _handle = None

    def _live(self):
        if not self._handle:
            raise Error(-1, f"the {self._what} is closed")
        return self._handle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


# ---- sender -------------------------------------------------------------------------------------

class Buffer:
    """A pool buffer lent by :meth:`Sender.lend`: fill :attr:`array` (or :attr:`planes`) in
    place and :meth:`submit` it; leaving a ``with`` block without submitting gives it back."""

    def __init__(self, sender, handle):
        self._sender = sender
        self._handle = handle
        self.array = None
        self.planes = None
        self.device_pointer = _buffer_data(handle)
        if _buffer_memory(handle) != _MEMORY_CUDA:
            layout = sender._layout
            whole = _bytes(self.device_pointer, layout.frame_bytes)
            self.array = _view(whole, layout, sender.pix_fmt, sender.width, sender.height)
            self.planes = _planes(whole, layout)

    def submit(self, pts_ns=None):
        """Sends it; True when sent, False when dropped (live, and no receiver had room)."""
        handle, self._handle = self._handle, None
        if handle is None:
            raise Error(-1, "this buffer was submitted or given back already")
        self.array = self.planes = None
        status = _check(_sender_submit(self._sender._handle, handle,
                                       PTS_AUTO if pts_ns is None else int(pts_ns)),
                        (_OK, _DROPPED, _ENDED))
        self._sender.receiver_ended = status == _ENDED
        return status == _OK

    def discard(self):
        if self._handle is not None:
            _sender_discard(self._sender._handle, self._handle)
            self._handle = None
            self.array = self.planes = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.discard()


class Sender(_Handle):
    """Connects to one receiver or several (fan-out: ``destinations`` a list, or "a:1,b:2") and
    starts a stream of ``width`` x ``height`` frames of ``pix_fmt`` (FFmpeg's names) at ``fps``
    (a number or a Fraction, 30000/1001)."""

    _what = "sender"

    def __init__(self, destinations, width, height, pix_fmt="rgba", fps=60, key_file=None,
                 name=None, transport=None, memory=None, live=False, paced=False,
                 checksum=False, reconnect=False, require_all=False, colour=None,
                 pool_buffers=4, connect_timeout_ms=5000):
        if not isinstance(destinations, str):
            destinations = ",".join(destinations)
        config = _SenderConfig()
        _sender_config_init(ctypes.byref(config))
        config.destinations = _text(destinations)
        config.key_file = _text(key_file)
        config.name = _text(name)
        config.transport = _text(transport)
        config.memory = _text(memory)
        config.live, config.paced, config.checksum = int(live), int(paced), int(checksum)
        config.reconnect, config.require_all = int(reconnect), int(require_all)
        config.pool_buffers = pool_buffers
        config.connect_timeout_ms = connect_timeout_ms
        handle = _P()
        _check(_sender_create(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle
        self.receiver_ended = False
        self._tracks = {}  # track number: (channels, sample type)
        try:
            self.start(width, height, pix_fmt, fps, colour)
        except Error:
            self.close()
            raise

    def start(self, width, height, pix_fmt="rgba", fps=60, colour=None):
        """Starts the stream, or changes its format."""
        rate = Fraction(fps).limit_denominator(1001000)
        f = _VideoFormat()
        _format_init(ctypes.byref(f))
        f.pix_fmt = _text(pix_fmt)
        f.width, f.height = width, height
        f.fps_num, f.fps_den = rate.numerator, rate.denominator
        f.colour = _text(colour)
        _check(_sender_start(self._live(), ctypes.byref(f)))
        self._layout = _Layout()
        _check(_sender_layout(self._handle, ctypes.byref(self._layout)))
        self.width, self.height, self.pix_fmt, self.fps = width, height, pix_fmt, rate
        self.frame_bytes = self._layout.frame_bytes

    def lend(self):
        """A pool buffer to fill in place (zero copy), waiting for one to be free."""
        handle = _P()
        _check(_sender_lend(self._live(), ctypes.byref(handle)))
        return Buffer(self, handle)

    def send(self, frame, pts_ns=None):
        """Sends one frame: a numpy array or any bytes-like object of exactly frame_bytes,
        copied once into a pool buffer by the library. True when sent, False when dropped."""
        view = memoryview(frame)
        if not view.c_contiguous:
            view = memoryview(np.ascontiguousarray(frame))
        if view.nbytes != self.frame_bytes:
            raise Error(-1, f"a frame of {self.pix_fmt} {self.width}x{self.height} is "
                            f"{self.frame_bytes} bytes, and this one is {view.nbytes}")
        address = np.frombuffer(view, dtype=np.uint8).ctypes.data
        status = _check(_sender_send(self._live(), address, view.nbytes,
                                     PTS_AUTO if pts_ns is None else int(pts_ns)),
                        (_OK, _DROPPED, _ENDED))
        self.receiver_ended = status == _ENDED
        return status == _OK

    def start_audio(self, sample_rate=48000, channels=2, sample_format="f32", name=None,
                    channel_layout=0):
        """Adds an audio track; returns its number for :meth:`send_audio`."""
        if sample_format not in _SAMPLE_FORMATS:
            raise Error(-1, f"sample_format \"{sample_format}\" unknown "
                            f"({', '.join(_SAMPLE_FORMATS)})")
        a = _AudioFormat()
        _audio_init(ctypes.byref(a))
        a.sample_format = _SAMPLE_FORMATS[sample_format]
        a.sample_rate, a.channels, a.channel_layout = sample_rate, channels, channel_layout
        a.name = _text(name)
        track = ctypes.c_uint32()
        _check(_sender_start_audio(self._live(), ctypes.byref(a), ctypes.byref(track)))
        self._tracks[track.value] = (channels, np.dtype(_SAMPLE_DTYPES[a.sample_format]))
        return track.value

    def send_audio(self, samples, pts_ns, track=0):
        """Samples of a track as numpy: (n, channels) interleaved, or (channels, n) for the
        planar formats, of the track's sample type; the first at pts_ns on the video's clock."""
        channels, dtype = self._tracks[track]
        data = np.ascontiguousarray(samples, dtype=dtype)
        count = data.size // channels
        _check(_sender_send_audio(self._live(), track, int(pts_ns), count, data.ctypes.data,
                                  data.nbytes))

    def end_audio(self, track=0):
        _check(_sender_end_audio(self._live(), track))

    def stats(self):
        """frames, bytes, dropped, seconds, cpu_seconds, ... as a dict."""
        return _stats(_sender_stats, self._live())

    def close(self):
        """Sends every frame in flight and ends the stream. Idempotent."""
        handle, self._handle = self._handle, None
        if handle:
            status = _sender_end(handle)
            message = _last_error().decode(errors="replace")
            _sender_destroy(handle)
            if status < 0:
                raise Error(status, message)

    def __del__(self):
        handle, self._handle = self._handle, None
        if handle:
            _sender_destroy(handle)


# ---- receiver -----------------------------------------------------------------------------------

class Frame:
    """A received frame, still in its ring slot: :attr:`array` views it without a copy (for
    host memory) until :meth:`release`, which gives the slot back to the sender.
    ``np.array(f.array)`` keeps a copy."""

    def __init__(self, handle):
        self._handle = handle
        f = _VideoFormat()
        f.struct_size = ctypes.sizeof(_VideoFormat)
        _frame_format(handle, ctypes.byref(f))
        self.pix_fmt = f.pix_fmt.decode()
        self.width, self.height = f.width, f.height
        self.fps = Fraction(f.fps_num, f.fps_den)
        self.name = f.name.decode(errors="replace")
        self.pts_ns = _frame_pts(handle)
        self.sequence = _frame_sequence(handle)
        self.stream = _frame_stream(handle)
        self.layout = _Layout()
        _frame_layout(handle, ctypes.byref(self.layout))
        self.size = _frame_size(handle)
        self.device_pointer = _frame_data(handle)
        self.on_gpu = _frame_memory(handle) == _MEMORY_CUDA
        # The whole frame's bytes, every plane, as one uint8 array over the slot.
        self.data = None if self.on_gpu else _bytes(self.device_pointer, self.size)
        self.array = None if self.on_gpu else _view(self.data, self.layout, self.pix_fmt,
                                                    self.width, self.height)

    @property
    def planes(self):
        """Each plane as a (rows, stride) uint8 array over the slot."""
        if self._handle is None or self.on_gpu:
            return None
        return _planes(self.data, self.layout)

    def release(self):
        """Gives the slot back; :attr:`array` must not be used afterwards."""
        handle, self._handle = self._handle, None
        self.array = self.data = None
        if handle:
            _frame_release(handle)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def __del__(self):
        self.release()


class Chunk:
    """Audio samples of one track, copied out of the library: :attr:`samples` is numpy,
    (n, channels) interleaved or (channels, n) planar."""

    def __init__(self, handle):
        a = _AudioFormat()
        a.struct_size = ctypes.sizeof(_AudioFormat)
        _chunk_format(handle, ctypes.byref(a))
        self.stream = _chunk_stream(handle)
        self.track = _chunk_track(handle)
        self.sample_rate, self.channels = a.sample_rate, a.channels
        self.sample_format = {v: k for k, v in _SAMPLE_FORMATS.items()}[a.sample_format]
        self.name = a.name.decode(errors="replace") if a.name else ""
        self.pts_ns = _chunk_pts(handle)
        n = _chunk_samples(handle)
        raw = ctypes.string_at(_chunk_data(handle), _chunk_size(handle))
        data = np.frombuffer(raw, dtype=_SAMPLE_DTYPES[a.sample_format])
        planar = self.sample_format.endswith("p")
        self.samples = data.reshape((a.channels, n) if planar else (n, a.channels))
        _chunk_release(handle)


class Receiver(_Handle):
    """Listens on ``listen`` ("0.0.0.0:5000"; port 0 for any, then see :attr:`port`) and takes
    up to ``max_streams`` senders at once. Iterating gives every frame of every stream, each
    released when the next is asked for, until every stream taken has ended and no sender is
    connected."""

    _what = "receiver"
    _current = None  # the frame iteration handed out last

    def __init__(self, listen, key_file=None, transport=None, memory=None, max_streams=1,
                 ring_slots=8, max_memory=0, stream_limit=0, verify=False):
        config = _ReceiverConfig()
        _receiver_config_init(ctypes.byref(config))
        config.listen = _text(listen)
        config.key_file = _text(key_file)
        config.transport = _text(transport)
        config.memory = _text(memory)
        config.max_streams, config.ring_slots = max_streams, ring_slots
        config.max_memory, config.stream_limit = max_memory, stream_limit
        config.verify = int(verify)
        handle = _P()
        _check(_receiver_create(ctypes.byref(config), ctypes.byref(handle)))
        self._handle = handle
        self.port = _receiver_port(handle)
        self._current = None

    def next_frame(self, timeout=None):
        """The next frame, waiting up to ``timeout`` seconds (None: as long as it takes); None
        when none came in time. Raises StopIteration once the streams have ended."""
        return self._next(_receiver_next_frame, Frame, timeout)

    def next_chunk(self, timeout=None):
        """The next audio chunk of any stream's tracks, as next_frame()."""
        return self._next(_receiver_next_chunk, Chunk, timeout)

    def _next(self, take, make, timeout):
        handle = _P()
        ms = -1 if timeout is None else max(0, int(timeout * 1000))
        status = _check(take(self._live(), ms, ctypes.byref(handle)), (_OK, _TIMEOUT, _ENDED))
        if status == _ENDED:
            raise StopIteration
        return make(handle) if status == _OK else None

    def __iter__(self):
        while True:
            if self._current is not None:
                self._current.release()
                self._current = None
            try:
                frame = self.next_frame()
            except StopIteration:
                return
            self._current = frame
            yield frame

    def chunks(self):
        """Every audio chunk, until the streams have ended."""
        while True:
            try:
                chunk = self.next_chunk()
            except StopIteration:
                return
            yield chunk

    def stats(self):
        return _stats(_receiver_stats, self._live())

    def stop(self):
        """Ends every stream (each sender is told); the iteration then ends."""
        _receiver_stop(self._live())

    def close(self):
        if self._current is not None:
            self._current.release()
            self._current = None
        handle, self._handle = self._handle, None
        if handle:
            _receiver_destroy(handle)

    def __del__(self):
        self.close()

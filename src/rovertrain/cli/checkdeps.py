"""`rovertrain check-deps`: versions, the policy, and a real PyAV round trip in memory."""

from __future__ import annotations

import io
import platform
from types import ModuleType

from rovertrain import __version__
from rovertrain.contracts.errors import RovertrainError
from rovertrain.contracts.json_types import JsonObject


def self_test() -> JsonObject:
    """Encode a few frames to VP8 WebM in memory, decode them back, compare."""
    import av
    import numpy as np

    frames = []
    for index in range(6):
        image = np.zeros((64, 96, 3), dtype=np.uint8)
        image[:, : 16 * (index + 1)] = (200, 60, 30)
        frames.append(image)
    buffer = io.BytesIO()
    with av.open(buffer, mode="w", format="webm") as container:
        stream = container.add_stream("libvpx", rate=10)
        stream.width, stream.height, stream.pix_fmt = 96, 64, "yuv420p"
        stream.bit_rate = 2_000_000
        for index, image in enumerate(frames):
            frame = av.VideoFrame.from_ndarray(image, format="rgb24")
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    buffer.seek(0)
    decoded = []
    with av.open(buffer, mode="r") as container:
        for frame in container.decode(video=0):
            decoded.append(frame.to_ndarray(format="rgb24"))
    if len(decoded) != len(frames):
        raise RovertrainError(
            "self_test_failed", f"PyAV round trip decoded {len(decoded)} of {len(frames)} frames"
        )
    error = max(
        float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())
        for a, b in zip(frames, decoded, strict=True)
    )
    if error > 12:
        raise RovertrainError("self_test_failed", f"PyAV round trip error {error:.1f} too high")
    return {"codec": "libvpx", "frames": len(decoded), "meanAbsoluteError": round(error, 3)}


def check_dependencies() -> JsonObject:
    """The `dependencies` event's fields."""
    versions: JsonObject = {"python": platform.python_version(), "rovertrain": __version__}
    for name in ("numpy", "torch", "av", "orjson", "rich", "click", "safetensors"):
        try:
            module = __import__(name)
        except Exception as error:
            raise RovertrainError(
                "missing_dependency",
                f"Python package {name} cannot be imported: {error}",
                f"{type(error).__name__}: {error}",
            ) from None
        versions[name] = _version(name, module)
    versions["deploy"] = _optional_versions(("onnx", "onnxscript", "onnxruntime"))
    versions["rosbag"] = _optional_versions(("rosbags",))
    import av

    versions["ffmpeg"] = {name: ".".join(map(str, v)) for name, v in av.library_versions.items()}
    from rovertrain.contracts.command_schema import initial_schema
    from rovertrain.learn.policy import parameter_count, specification

    try:
        result = self_test()
    except RovertrainError:
        raise
    except Exception as error:
        raise RovertrainError("self_test_failed", f"PyAV self-test failed: {error}") from None
    return {
        **versions,
        "parameters": parameter_count(),
        "specification": specification(initial_schema()),
        "selfTest": {"passed": True, **result},
    }


def _version(name: str, module: ModuleType) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return str(getattr(module, "__version__", "unknown"))


def _optional_versions(names: tuple[str, ...]) -> JsonObject:
    """Optional packages (`rovertrain[deploy]`, `rovertrain[rosbag]`): a version, or None if
    missing."""
    found: JsonObject = {}
    for name in names:
        try:
            module = __import__(name)
        except Exception:
            found[name] = None
            continue
        found[name] = _version(name, module)
    return found

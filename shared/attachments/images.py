"""A photo made fit for the model: decoded, turned upright, downscaled, re-encoded as JPEG without metadata.

What leaves for the LLM server is never the user's file: only the pixels, at most :data:`IMAGE_MAX_SIDE`
on the longer side, re-encoded, so EXIF (GPS position, camera, time) and anything hidden after the image
data are gone, and a file that only claims to be an image is refused here.
"""

from __future__ import annotations

import base64
import io
import warnings

from PIL import Image, ImageOps, UnidentifiedImageError

from shared.errors import MnemoError

IMAGE_MAX_SIDE = 1024
"""The longer side of the image the model gets, in pixels (OpenAI scales "high detail" images to 2048 then 768 on the
short side anyway; 1024 keeps a photo's detail at a quarter of the tokens and bytes)."""
MAX_SOURCE_PIXELS = 40_000_000
"""A bigger picture (a decompression bomb, or a huge scan) is refused before it is decoded."""
JPEG_QUALITY = 85


class UnreadableImage(MnemoError):
    """The file is not an image this bot can decode."""


def for_model(data: bytes) -> bytes:
    """``data`` (any image Pillow reads) as a JPEG of at most :data:`IMAGE_MAX_SIDE` pixels a side, upright and
    without metadata; raises :class:`UnreadableImage`."""
    try:
        with warnings.catch_warnings():  # Pillow only warns of a picture past its own limit: refuse it here
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            source = Image.open(io.BytesIO(data))
        with source:
            width, height = source.size
            if width * height > MAX_SOURCE_PIXELS:
                raise UnreadableImage(f"the image is too large to decode ({width}x{height})")
            source.draft("RGB", (IMAGE_MAX_SIDE, IMAGE_MAX_SIDE))  # JPEG: decode at a smaller scale straight away
            upright = ImageOps.exif_transpose(source)
            upright.thumbnail((IMAGE_MAX_SIDE, IMAGE_MAX_SIDE), Image.Resampling.LANCZOS)
            pixels = _on_white(upright)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning) as exc:
        raise UnreadableImage(f"not a readable image: {exc}") from exc
    out = io.BytesIO()
    pixels.save(out, format="JPEG", quality=JPEG_QUALITY, optimize=True)  # no exif= given: none is written
    return out.getvalue()


def data_url(jpeg: bytes) -> str:
    """The ``data:`` URL an OpenAI-compatible ``image_url`` part carries."""
    return "data:image/jpeg;base64," + base64.b64encode(jpeg).decode("ascii")


def _on_white(image: Image.Image) -> Image.Image:
    """RGB pixels; transparency laid over white (a sticker-like PNG stays readable)."""
    if image.mode in ("RGBA", "LA", "P"):
        rgba = image.convert("RGBA")
        background = Image.new("RGB", rgba.size, (255, 255, 255))
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return image.convert("RGB")

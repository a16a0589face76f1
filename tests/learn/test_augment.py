"""Train-only image augmentation: what each draw does, and that a share of a batch gets the
same draws as the whole batch would (ranks stay in step)."""

from __future__ import annotations

import torch

from rovertrain.learn.batches import affine_rows, augment, shift_rows


def test_shift_rows_moves_pixels_and_repeats_edges() -> None:
    images = torch.arange(2 * 1 * 5 * 4, dtype=torch.float32).view(2, 1, 5, 4)
    # Image 0 unmoved; image 1 reads two rows further down (its picture moves up).
    moved = shift_rows(images, torch.tensor([0, 2]))
    assert torch.equal(moved[0], images[0])
    source = images[1, 0]
    for y in range(5):
        for x in range(4):
            assert moved[1, 0, y, x] == source[min(max(y + 2, 0), 4), x]


def test_shift_rows_keeps_channels_apart() -> None:
    images = torch.stack([torch.full((6, 3), float(c)) for c in range(3)])[None]
    moved = shift_rows(images, torch.tensor([-3]))
    assert moved.shape == images.shape
    for channel in range(3):
        assert torch.all(moved[0, channel] == channel)


def test_colour_gain_scales_each_channel_within_its_spread() -> None:
    images = torch.full((64, 3, 8, 8), 128, dtype=torch.uint8)
    plain = augment(images, torch.Generator().manual_seed(1))
    tinted = augment(images, torch.Generator().manual_seed(1), colour=0.4)
    # Same brightness/contrast draws first; the gain is the ratio, one per image and channel.
    ratio = tinted / plain
    per_channel = ratio.mean(dim=(2, 3))
    assert torch.allclose(ratio, per_channel[:, :, None, None], atol=1e-5)
    assert per_channel.min() >= 0.8 - 1e-5 and per_channel.max() <= 1.2 + 1e-5
    assert per_channel.std(dim=1).mean() > 0.02  # the channels get different gains


def test_shift_moves_a_horizontal_edge_by_at_most_the_shift_and_never_sideways() -> None:
    images = torch.zeros((32, 3, 16, 16), dtype=torch.uint8)
    images[:, :, 8:, :] = 255  # a horizontal edge between rows 7 and 8
    images[:, :, :, 12:] = 128  # and a vertical one between columns 11 and 12
    shifted = augment(images, torch.Generator().manual_seed(2), shift=3)
    edges = set()
    for image in shifted:
        column = image[0, :, 5]
        edge = int(torch.argmax((column[1:] - column[:-1]).abs())) + 1
        edges.add(edge)
        assert 5 <= edge <= 11
        row = image[0, 2]  # above the horizontal edge wherever it went
        assert int(torch.argmax((row[1:] - row[:-1]).abs())) + 1 == 12
    assert len(edges) > 3  # the offsets vary between images


def test_a_share_gets_the_whole_batch_draws() -> None:
    images = torch.randint(0, 256, (8, 3, 10, 12), dtype=torch.uint8)
    whole = augment(images, torch.Generator().manual_seed(3), colour=0.3, shift=2)
    share = slice(4, 8)
    part = augment(
        images[share], torch.Generator().manual_seed(3), share, len(images), colour=0.3, shift=2
    )
    assert torch.allclose(part, whole[share])


def test_disabled_colour_and_shift_leave_the_old_draws() -> None:
    images = torch.randint(0, 256, (8, 3, 10, 12), dtype=torch.uint8)
    generator = torch.Generator().manual_seed(4)
    augment(images, generator)
    after_plain = torch.rand(1, generator=generator)
    generator = torch.Generator().manual_seed(4)
    augment(images, generator, colour=0.0, shift=0)
    assert torch.equal(torch.rand(1, generator=generator), after_plain)


def test_shifting_the_bytes_first_gives_the_same_floats_in_channels_last() -> None:
    """The map written out in floats, shift last (as the augmentation was first written),
    against the product's: the same values, and a channels_last result (the model's layout)."""
    generator = torch.Generator().manual_seed(5)
    pictures = torch.randint(0, 256, (6, 9, 11, 6), generator=generator, dtype=torch.uint8)
    images = pictures.permute(0, 3, 1, 2)  # the pool's NHWC bytes seen as N×C×H×W
    result = augment(images, torch.Generator().manual_seed(6), colour=0.3, shift=3)
    assert result.is_contiguous(memory_format=torch.channels_last)
    draws = torch.Generator().manual_seed(6)
    brightness = (torch.rand(6, 1, 1, 1, generator=draws) - 0.5) * 0.3
    contrast = 1.0 + (torch.rand(6, 1, 1, 1, generator=draws) - 0.5) * 0.4
    gains = 1.0 + (torch.rand(6, 3, 1, 1, generator=draws) - 0.5) * 0.3
    offsets = torch.randint(0, 7, (6, 1), generator=draws).view(-1) - 3
    pixels = images.float() / 255.0
    expected = torch.empty_like(pixels)
    for frame in (slice(0, 3), slice(3, 6)):
        part = pixels[:, frame]
        mean = part.mean(dim=(1, 2, 3), keepdim=True)
        expected[:, frame] = ((part - mean) * contrast + mean + brightness) * gains
    expected = shift_rows(expected, offsets).clamp(0.0, 1.0)
    assert torch.allclose(result, expected, atol=1e-5)


def test_the_row_wise_map_is_the_broadcast_map_bit_for_bit() -> None:
    """`affine_rows` spreads the per-channel factors over a picture row for speed: the same
    float32 products and sums as the plain broadcast, for a factor per image or per channel."""
    generator = torch.Generator().manual_seed(7)
    pictures = torch.randint(0, 256, (5, 7, 9, 6), generator=generator, dtype=torch.uint8)
    images = pictures.permute(0, 3, 1, 2)  # channels_last, as the pool's batches are
    offset = torch.rand(5, 6, 1, 1, generator=generator) - 0.5
    for scale in (torch.rand(5, 1, 1, 1, generator=generator), torch.rand(5, 6, 1, 1)):
        result = affine_rows(images, scale, offset)
        assert result.is_contiguous(memory_format=torch.channels_last)
        assert torch.equal(result, torch.mul(images, scale).add_(offset).clamp_(0.0, 1.0))


def test_shift_rows_reads_either_layout_alike() -> None:
    images = torch.randint(0, 256, (4, 6, 8, 5), dtype=torch.uint8)
    offsets = torch.tensor([-2, 0, 3, 9])
    plain = shift_rows(images, offsets)
    channels_last = shift_rows(images.contiguous(memory_format=torch.channels_last), offsets)
    assert torch.equal(plain, channels_last)
    assert torch.equal(plain[3], images[3, :, -1:].expand(6, 8, 5))  # past the edge: last row

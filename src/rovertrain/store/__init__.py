"""The training root on disk: its layout, durable writes, published checkpoints and the
current model."""

"""The policy and how it learns: the model, batches, losses, the training loop, held-out
evaluation and the metrics the gate reads. Imports no video decoder."""

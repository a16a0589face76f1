"""What a trained policy does outside a job: export to the rover's runtime, replay on a
recording, drive the simulated worlds."""

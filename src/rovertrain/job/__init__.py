"""One finite training job, step by step (`run.run_steps`): config, resume, data, training,
evaluation, publication, and the budget and signals around them."""

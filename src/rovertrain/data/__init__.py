"""Recordings and the windows a job learns from: reading format v1, labelling 100 ms windows,
splitting and sampling sessions, and the window store of decoded frames."""

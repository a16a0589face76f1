"""`rovertrain review`: the fleet's drives and models in a browser, and the stretches left out."""

from rovertrain.cli import main

main()

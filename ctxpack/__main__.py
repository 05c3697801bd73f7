from ctxpack.cli import main

main()

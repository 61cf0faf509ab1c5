from wikigr.cli import main

main()

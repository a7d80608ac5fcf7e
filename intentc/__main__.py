from intentc.cli import main

main()

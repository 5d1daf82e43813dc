from tools.client_bench.cli import main

main()

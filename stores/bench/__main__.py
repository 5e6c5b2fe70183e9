from engram.stores.bench.run import main

raise SystemExit(main())

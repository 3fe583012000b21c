from navrl.cli.main import main

raise SystemExit(main())

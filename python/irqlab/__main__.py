from irqlab.cli import main

raise SystemExit(main())

from monitor.dashboards.generate import main

raise SystemExit(main())

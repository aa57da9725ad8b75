import sys

from orgteams.cli.main import main

sys.exit(main())

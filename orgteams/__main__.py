import sys

from orgteams.cli import main

sys.exit(main())

"""``python -m aiograd.serving --model package.module:factory [--weights FILE] ...``: see
``aiograd.serving.http`` and docs/serving.md."""

from ._cli import main

if __name__ == "__main__":
    main()

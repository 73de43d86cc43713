#!/bin/sh
# install-sources.sh installs the Debian packages whose text build_corpus.py
# reads, plus the tools it renders man pages with. Run as root on Debian 12.
set -eu
apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
	fortunes fortunes-min \
	debian-faq \
	manpages manpages-dev \
	python3-doc \
	sqlite3-doc \
	postgresql-doc-15 \
	libcurl4-doc python-django-doc python-flask-doc zsh-doc \
	groff-base

#!/bin/sh
# A graphviz that never finishes its layout.
exec sleep 60

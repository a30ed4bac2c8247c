# The harness's logs in fixtures/ hold its test_output.txt files, which pytest would take
# for doctests (its default --doctest-glob is test*.txt).
collect_ignore = ["fixtures"]

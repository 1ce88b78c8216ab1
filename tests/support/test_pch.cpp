// The translation unit that compiles the tests' precompiled header (tests/CMakeLists.txt:
// servelab_test_pch); every test target reuses the header it builds.

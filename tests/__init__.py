"""The tests, in folders that mirror the packages (tests/stats beside compassess_core/stats, ...);
tests/app and tests/browser test the pages, tests/docs the documentation. Shared helpers
(fakes, the warm command line, the browser walk) sit here at the top."""

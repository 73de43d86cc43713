//go:build !unix

package fit_test

// peakRSS has no portable counter here; the RSS tests skip.
func peakRSS() (int64, bool) { return 0, false }

func currentRSS() (int64, bool) { return 0, false }

func detail() string { return "" }

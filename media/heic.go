package media

import "bytes"

// isHEIC reports whether data is an ISO-BMFF file branded as HEIF/HEIC
// (an iPhone photo): its ftyp box names heic, heix, mif1 or msf1.
func isHEIC(data []byte) bool {
	if len(data) < 12 || !bytes.Equal(data[4:8], []byte("ftyp")) {
		return false
	}
	switch string(data[8:12]) {
	case "heic", "heix", "hevc", "heim", "heis", "mif1", "msf1":
		return true
	}
	return false
}

package jsontext

// SkipSpace returns the index of the first byte of src at or after i that
// is not JSON white space.
func SkipSpace[S ~string | ~[]byte](src S, i int) int {
	for i < len(src) && (src[i] == ' ' || src[i] == '\t' || src[i] == '\n' || src[i] == '\r') {
		i++
	}
	return i
}

// StringEnd returns the index just past the JSON string whose opening
// quote is src[i], or len(src)+1 when the string is not terminated.
func StringEnd[S ~string | ~[]byte](src S, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src) + 1
}

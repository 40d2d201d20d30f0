package survey

// goDemos are the demonstrations written in Go.
var goDemos = []Demo{}

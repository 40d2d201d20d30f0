package survey

// phpDemos are the demonstrations written in PHP.
var phpDemos = []Demo{}

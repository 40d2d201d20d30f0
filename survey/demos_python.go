package survey

// pythonDemos are the demonstrations written in Python.
var pythonDemos = []Demo{}
